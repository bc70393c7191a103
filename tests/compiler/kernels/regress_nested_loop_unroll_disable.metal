// ENTRIES: k
#include <metal_stdlib>
using namespace metal;
kernel void k(device const float* A [[buffer(0)]], device float* C [[buffer(1)]], uint gid [[thread_position_in_grid]]) {
  float s = 0.0f;
#pragma clang loop unroll(disable)
  for (int i = 0; i < 4; ++i)
#pragma clang loop unroll_count(2)
    for (int j = 0; j < 4; ++j) s += A[i * 4 + j];
  C[gid] = s;
}
