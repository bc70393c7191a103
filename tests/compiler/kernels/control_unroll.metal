// ENTRIES: control_unroll
// (An unroll(disable) loop around another loop is covered by regress_nested_loop_unroll_disable.metal.)
// #pragma clang loop unroll(full), #pragma unroll and #pragma unroll N on fixed-trip loops (as in MLX's GEMM tiles).
#include <metal_stdlib>
using namespace metal;

template <int TM, int TN>
void outer(thread float (&acc)[TM][TN], thread const float (&a)[TM], thread const float (&b)[TN]) {
#pragma clang loop unroll(full)
  for (int i = 0; i < TM; ++i) {
#pragma clang loop unroll(full)
    for (int j = 0; j < TN; ++j) acc[i][j] = fma(a[i], b[j], acc[i][j]);
  }
}

kernel void control_unroll(device const float* A [[buffer(0)]], device const float* B [[buffer(1)]],
                           device float* C [[buffer(2)]], constant int& K [[buffer(3)]],
                           uint gid [[thread_position_in_grid]]) {
  float acc[4][4] = {{0.0f}};
  for (int k = 0; k < K; ++k) {
    float a[4], b[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) a[i] = A[(gid * 4 + i) * K + k];
#pragma unroll 4
    for (int j = 0; j < 4; ++j) b[j] = B[k * 4 + j];
    outer<4, 4>(acc, a, b);
  }
  float s = 0.0f;
#pragma clang loop unroll_count(2)
  for (int i = 0; i < 16; ++i) s += acc[i / 4][i % 4];
#pragma clang loop unroll(disable)
  for (int i = 0; i < K; ++i) s *= 0.5f;
  C[gid] = s;
}
