// C[M,N] = A[M,K] B[K,N] (row-major): naive (one thread per output), threadgroup-tiled (16x16 tiles in threadgroup
// memory), and simdgroup_matrix 8x8 (one simdgroup per 8x8 output tile, 2x2 simdgroups per threadgroup).
#include <metal_stdlib>
using namespace metal;

struct GemmParams {
  int M, N, K;
};

template <typename T>
[[kernel]] void gemm_naive(const device T* A [[buffer(0)]], const device T* B [[buffer(1)]], device T* C [[buffer(2)]],
                           constant GemmParams& p [[buffer(3)]], uint2 pos [[thread_position_in_grid]]) {
  uint col = pos.x, row = pos.y;
  float acc = 0;
  for (int k = 0; k < p.K; ++k) acc += float(A[row * p.K + k]) * float(B[k * p.N + col]);
  C[row * p.N + col] = static_cast<T>(acc);
}

template <typename T, int BS>
[[kernel]] void gemm_tiled(const device T* A [[buffer(0)]], const device T* B [[buffer(1)]], device T* C [[buffer(2)]],
                           constant GemmParams& p [[buffer(3)]], uint2 tid [[thread_position_in_threadgroup]],
                           uint2 tg [[threadgroup_position_in_grid]]) {
  threadgroup T As[BS][BS];
  threadgroup T Bs[BS][BS];
  int row = tg.y * BS + tid.y, col = tg.x * BS + tid.x;
  float acc = 0;
  for (int k0 = 0; k0 < p.K; k0 += BS) {
    As[tid.y][tid.x] = (row < p.M && k0 + int(tid.x) < p.K) ? A[row * p.K + k0 + tid.x] : T(0);
    Bs[tid.y][tid.x] = (col < p.N && k0 + int(tid.y) < p.K) ? B[(k0 + tid.y) * p.N + col] : T(0);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (int k = 0; k < BS; ++k) acc += float(As[tid.y][k]) * float(Bs[k][tid.x]);
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  if (row < p.M && col < p.N) C[row * p.N + col] = static_cast<T>(acc);
}

// M, N multiples of 16, K multiple of 8. Threadgroup = 128 threads = 4 simdgroups covering a 16x16 output block.
template <typename T>
[[kernel]] void gemm_simdgroup(const device T* A [[buffer(0)]], const device T* B [[buffer(1)]],
                               device float* C [[buffer(2)]], constant GemmParams& p [[buffer(3)]],
                               uint2 tg [[threadgroup_position_in_grid]], uint sg [[simdgroup_index_in_threadgroup]]) {
  int row0 = tg.y * 16 + (sg / 2) * 8, col0 = tg.x * 16 + (sg % 2) * 8;
  simdgroup_matrix<float, 8, 8> acc = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
  simdgroup_matrix<T, 8, 8> a, b;
  for (int k = 0; k < p.K; k += 8) {
    simdgroup_load(a, A + row0 * p.K + k, p.K);
    simdgroup_load(b, B + k * p.N + col0, p.N);
    simdgroup_multiply_accumulate(acc, a, b, acc);
  }
  simdgroup_store(acc, C + row0 * p.N + col0, p.N);
}

// Same tiles, but the result leaves through thread_elements() (two values per lane, Apple's layout) with a bias add.
[[kernel]] void gemm_simdgroup_elems(const device float* A [[buffer(0)]], const device float* B [[buffer(1)]],
                                     const device float* bias [[buffer(2)]], device float* C [[buffer(3)]],
                                     constant GemmParams& p [[buffer(4)]], uint2 tg [[threadgroup_position_in_grid]],
                                     ushort lane [[thread_index_in_simdgroup]]) {
  int row0 = tg.y * 8, col0 = tg.x * 8;
  simdgroup_float8x8 acc(0), a, b;
  for (int k = 0; k < p.K; k += 8) {
    simdgroup_load(a, A + row0 * p.K + k, p.K);
    simdgroup_load(b, B + k * p.N + col0, p.N);
    simdgroup_multiply_accumulate(acc, a, b, acc);
  }
  ushort qid = lane / 4;
  ushort fm = (qid & 4) + ((lane / 2) % 4);
  ushort fn = (qid & 2) * 2 + (lane % 2) * 2;
  auto e = acc.thread_elements();
  C[(row0 + fm) * p.N + col0 + fn] = e[0] + bias[col0 + fn];
  C[(row0 + fm) * p.N + col0 + fn + 1] = e[1] + bias[col0 + fn + 1];
}

#define instantiate_gemm(tname, T) \
  template [[host_name("gemm_naive_" #tname)]] [[kernel]] decltype(gemm_naive<T>) gemm_naive<T>; \
  template [[host_name("gemm_tiled_" #tname)]] [[kernel]] decltype(gemm_tiled<T, 16>) gemm_tiled<T, 16>; \
  template [[host_name("gemm_simdgroup_" #tname)]] [[kernel]] decltype(gemm_simdgroup<T>) gemm_simdgroup<T>;
instantiate_gemm(float, float)
instantiate_gemm(half, half)
instantiate_gemm(bfloat, bfloat)
