// A pointer that chooses between thread variables: even- and odd-indexed elements summed into two variables
// through one pointer that alternates between them (a SPIR-V pointer into thread memory is one variable and an
// offset, so the two become elements of one array).
#include <metal_stdlib>
using namespace metal;

kernel void alternate(device const float* x [[buffer(0)]], device float* y [[buffer(1)]],
                      constant uint& n [[buffer(2)]], uint gid [[thread_position_in_grid]]) {
  float even = 0.0f, odd = 0.0f;
  thread float* p = &even;
  for (uint i = 0; i < n; ++i) {
    *p += x[gid * n + i];
    p = (i & 1) ? &even : &odd;
  }
  y[gid * 2] = even;
  y[gid * 2 + 1] = odd;
}
