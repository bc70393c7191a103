// ENTRIES: k
#include <metal_stdlib>
using namespace metal;
kernel void k(device const uint2* in [[buffer(0)]], device uint* out [[buffer(1)]], uint2 pos [[thread_position_in_grid]]) {
  out[pos.x] = any(in[pos.x] >= uint2(4)) ? 1u : 0u;
}
