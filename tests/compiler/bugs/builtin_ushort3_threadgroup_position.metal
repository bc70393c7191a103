#include <metal_stdlib>
using namespace metal;
kernel void k(device ushort* out [[buffer(0)]], ushort3 tg [[threadgroup_position_in_grid]]) {
  out[0] = tg.y;
}
