// Post-rewrite test kernels: simdgroup / quadgroup functions, barriers, votes, for every element type.
#include <metal_stdlib>
using namespace metal;

template <class T> T shuffles(T x, ushort l) {
  return simd_shuffle(x, l) + simd_shuffle_up(x, 1) + simd_shuffle_down(x, 2) + simd_shuffle_xor(x, 4) +
         simd_shuffle_rotate_up(x, 3) + simd_shuffle_rotate_down(x, 5) + simd_broadcast(x, 0) +
         simd_broadcast_first(x) + simd_shuffle_and_fill_up(x, x, 2) + simd_shuffle_and_fill_down(x, x, 2, 8) +
         quad_shuffle(x, 1) + quad_shuffle_up(x, 1) + quad_shuffle_down(x, 1) + quad_shuffle_xor(x, 2) +
         quad_shuffle_rotate_up(x, 1) + quad_shuffle_rotate_down(x, 1) + quad_broadcast(x, 3) + quad_broadcast_first(x);
}
template <class T> T arith(T x) {
  return simd_sum(x) + simd_product(x) + simd_min(x) + simd_max(x) + simd_prefix_inclusive_sum(x) +
         simd_prefix_exclusive_sum(x) + simd_prefix_inclusive_product(x) + simd_prefix_exclusive_product(x) +
         quad_sum(x) + quad_product(x) + quad_min(x) + quad_max(x) + quad_prefix_inclusive_sum(x) +
         quad_prefix_exclusive_sum(x);
}
template <class T> T bitwise(T x) { return simd_and(x) | simd_or(x) | simd_xor(x) | quad_and(x) | quad_or(x) | quad_xor(x); }

#define KERNEL __attribute__((annotate("m2v.kernel")))
#define BUF(n) __attribute__((annotate("m2v.buffer", n)))
#define LANE __attribute__((annotate("m2v.builtin", "thread_index_in_simdgroup")))
#define FP_KERNEL(T)                                                                               \
  KERNEL void simd_##T(device T *o BUF(0), ushort lane LANE) { o[lane] = shuffles(o[lane], lane) + arith(o[lane]); }
#define INT_KERNEL(T)                                                                              \
  KERNEL void simd_##T(device T *o BUF(0), ushort lane LANE) {                                     \
    o[lane] = shuffles(o[lane], lane) + arith(o[lane]) + bitwise(o[lane]);                         \
  }
FP_KERNEL(float) FP_KERNEL(half) FP_KERNEL(bfloat) FP_KERNEL(float4) FP_KERNEL(half2) FP_KERNEL(bfloat3)
INT_KERNEL(int) INT_KERNEL(uint) INT_KERNEL(short) INT_KERNEL(uchar) INT_KERNEL(long) INT_KERNEL(ulong)
INT_KERNEL(int3) INT_KERNEL(uint2)

KERNEL void votes(device ulong *o BUF(0), device bool *b BUF(1), ushort lane LANE) {
  bool p = o[lane] > 3;
  simd_vote v = simd_ballot(p);
  quad_vote q = quad_ballot(p);
  o[lane] = ulong(v) + (v.all() ? 1 : 0) + (v.any() ? 2 : 0) + ulong(simd_active_threads_mask()) +
            ushort(q) + q.all() + q.any() + simd_all(p) + simd_any(p) + simd_is_first() + quad_all(p) +
            quad_any(p) + quad_is_first() + simd_is_helper_thread();
  b[lane] = simd_shuffle(p, ushort(lane ^ 1)) && simd_broadcast_first(b[lane]);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  threadgroup_barrier(mem_flags::mem_device | mem_flags::mem_threadgroup);
  simdgroup_barrier(mem_flags::mem_none);
}

// the common reduction pattern of real kernels
KERNEL void reduce(device const float *in BUF(0), device float *out BUF(1),
                   uint lid __attribute__((annotate("m2v.builtin", "thread_position_in_threadgroup"))),
                   ushort lane LANE, ushort sg __attribute__((annotate("m2v.builtin", "simdgroup_index_in_threadgroup")))) {
  static threadgroup float shared[32];
  float v = simd_sum(in[lid]);
  if (simd_is_first()) shared[sg] = v;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (sg == 0) {
    v = simd_sum(lane < 8 ? shared[lane] : 0.0f);
    if (lane == 0) out[0] = v;
  }
}
