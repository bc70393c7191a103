// ENTRIES: k
#include <metal_stdlib>
using namespace metal;
kernel void k(device float* C [[buffer(0)]], constant int& n [[buffer(1)]], uint gid [[thread_position_in_grid]]) {
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) C[i * n + j] = 0.0f;
}
