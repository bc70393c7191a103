// C[M,N] = A[M,K] * B[K,N], row-major floats, 16x16 tiles staged in threadgroup memory. Dispatched with
// dispatchThreadgroups(ceil(N/16), ceil(M/16)) so every tile has all 256 threads; edges are bounds-checked.
#include <metal_stdlib>
using namespace metal;

constant constexpr uint TILE = 16;

kernel void gemm_tiled(device const float* A [[buffer(0)]], device const float* B [[buffer(1)]],
                       device float* C [[buffer(2)]], constant uint3& mnk [[buffer(3)]],
                       uint2 group [[threadgroup_position_in_grid]], uint2 local [[thread_position_in_threadgroup]]) {
  threadgroup float As[TILE][TILE];
  threadgroup float Bs[TILE][TILE];
  const uint M = mnk.x, N = mnk.y, K = mnk.z;
  const uint row = group.y * TILE + local.y;
  const uint col = group.x * TILE + local.x;
  float acc = 0.0f;
  for (uint k0 = 0; k0 < K; k0 += TILE) {
    uint ak = k0 + local.x, bk = k0 + local.y;
    As[local.y][local.x] = (row < M && ak < K) ? A[row * K + ak] : 0.0f;
    Bs[local.y][local.x] = (bk < K && col < N) ? B[bk * N + col] : 0.0f;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (uint k = 0; k < TILE; ++k) acc = fma(As[local.y][k], Bs[k][local.x], acc);
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  if (row < M && col < N) C[row * N + col] = acc;
}
