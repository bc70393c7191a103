#include <metal_stdlib>
using namespace metal;
kernel void k(device ushort* out [[buffer(0)]], uint2 grid [[threads_per_grid]]) {
  out[0] = ushort(grid.x);
}
