// EXPECT-EXIT: 1
// EXPECT-MSG: error:
// EXPECT-MSG: 'n'
// EXPECT-LOC: 8:53
// A kernel parameter without any attribute (Metal requires [[buffer(n)]] or a built-in).
#include <metal_stdlib>
using namespace metal;
kernel void f(device float* out [[buffer(0)]], uint n, uint i [[thread_position_in_grid]]) {
  if (i < n) out[i] = 1.0f;
}
