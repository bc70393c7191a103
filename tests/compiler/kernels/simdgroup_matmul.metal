// ENTRIES: simdgroup_matmul_f32 simdgroup_matmul_f16
// An 8x8-tiled GEMM with simdgroup_matrix: load (with stride), multiply_accumulate, store; float and half.
#include <metal_stdlib>
using namespace metal;

template <typename T>
kernel void simdgroup_matmul(device const T* A [[buffer(0)]], device const T* B [[buffer(1)]],
                             device T* C [[buffer(2)]], constant uint& K [[buffer(3)]], constant uint& N [[buffer(4)]],
                             uint2 tg [[threadgroup_position_in_grid]]) {
  simdgroup_matrix<T, 8, 8> a, b;
  simdgroup_matrix<float, 8, 8> acc = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
  simdgroup_matrix<T, 8, 8> c;
  simdgroup_float8x8 accf(0.0f);
  const uint row = tg.y * 8, col = tg.x * 8;
  for (uint k = 0; k < K; k += 8) {
    simdgroup_load(a, A + row * K + k, K);
    simdgroup_load(b, B + k * N + col, N);
    simdgroup_multiply_accumulate(c, a, b, c);
  }
  simdgroup_barrier(mem_flags::mem_none);
  simdgroup_store(c, C + row * N + col, N);
  (void)acc;
  (void)accf;
}

template [[host_name("simdgroup_matmul_f32")]] kernel void simdgroup_matmul<float>(
    device const float*, device const float*, device float*, constant uint&, constant uint&, uint2);
template [[host_name("simdgroup_matmul_f16")]] kernel void simdgroup_matmul<half>(
    device const half*, device const half*, device half*, constant uint&, constant uint&, uint2);
