// Post-rewrite test kernels: simdgroup_matrix (8x8 float, half, bfloat) load / multiply / store.
#include <metal_stdlib>
using namespace metal;

#define KERNEL __attribute__((annotate("m2v.kernel")))
#define BUF(n) __attribute__((annotate("m2v.buffer", n)))
#define LANE __attribute__((annotate("m2v.builtin", "thread_index_in_simdgroup")))

template <class T> void gemm8(device T *c, const device T *a, const device T *b, uint n) {
  simdgroup_matrix<T, 8, 8> A, B, C = make_filled_simdgroup_matrix<T, 8, 8>(T(0));
  static threadgroup T tile[64];
  for (uint k = 0; k < n; k += 8) {
    simdgroup_load(A, a, n, __m2v::vec_ctor<ulong2>(k, 0));
    simdgroup_load(B, b + k * n, n);
    simdgroup_store(B, tile, 8);
    simdgroup_barrier(mem_flags::mem_threadgroup);
    simdgroup_load(B, tile, 8, ulong2(0), true);
    simdgroup_multiply_accumulate(C, A, B, C);
  }
  simdgroup_matrix<T, 8, 8> D;
  simdgroup_multiply(D, A, B);
  simdgroup_matrix<T, 8, 8> I(T(1));
  C.thread_elements() += D.thread_elements() + I.thread_elements();
  simdgroup_store(C, c, n);
}
KERNEL void gemm_float(device float *c BUF(0), const device float *a BUF(1), const device float *b BUF(2),
                       constant uint &n BUF(3)) { gemm8(c, a, b, n); }
KERNEL void gemm_half(device half *c BUF(0), const device half *a BUF(1), const device half *b BUF(2),
                      constant uint &n BUF(3)) { gemm8(c, a, b, n); }
KERNEL void gemm_bfloat(device bfloat *c BUF(0), const device bfloat *a BUF(1), const device bfloat *b BUF(2),
                        constant uint &n BUF(3)) { gemm8(c, a, b, n); }
// mixed precision: half inputs, float accumulator (steel-style thread_elements access)
KERNEL void gemm_mixed(device float *c BUF(0), const device half *a BUF(1), const device half *b BUF(2), ushort lane LANE) {
  simdgroup_half8x8 A, B;
  simdgroup_float8x8 C(0.0f);
  simdgroup_load(A, a);
  simdgroup_load(B, b);
  A.thread_elements()[0] = half(lane);
  simdgroup_multiply_accumulate(C, A, B, C);
  simdgroup_store(C, c);
}
