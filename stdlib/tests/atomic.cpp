// Post-rewrite test kernels: metal_atomic on device and threadgroup atomics, volatile or not.
#include <metal_stdlib>
using namespace metal;

template <class A, class T> T int_ops(A *a, T v) {
  T e = v;
  bool ok = atomic_compare_exchange_weak_explicit(a, &e, v, memory_order_relaxed, memory_order_relaxed);
  atomic_store_explicit(a, v, memory_order_relaxed);
  return atomic_load_explicit(a, memory_order_relaxed) + atomic_exchange_explicit(a, v, memory_order_relaxed) +
         atomic_fetch_add_explicit(a, v, memory_order_relaxed) + atomic_fetch_sub_explicit(a, v, memory_order_relaxed) +
         atomic_fetch_and_explicit(a, v, memory_order_relaxed) + atomic_fetch_or_explicit(a, v, memory_order_relaxed) +
         atomic_fetch_xor_explicit(a, v, memory_order_relaxed) + atomic_fetch_min_explicit(a, v, memory_order_relaxed) +
         atomic_fetch_max_explicit(a, v, memory_order_relaxed) + e + ok;
}
template <class A> float float_ops(A *a, float v) {
  float e = v;
  bool ok = atomic_compare_exchange_weak_explicit(a, &e, v, memory_order_relaxed, memory_order_relaxed);
  atomic_store_explicit(a, v, memory_order_relaxed);
  return atomic_load_explicit(a, memory_order_relaxed) + atomic_exchange_explicit(a, v, memory_order_relaxed) +
         atomic_fetch_add_explicit(a, v, memory_order_relaxed) + atomic_fetch_sub_explicit(a, v, memory_order_relaxed) + e + ok;
}

#define KERNEL __attribute__((annotate("m2v.kernel")))
#define BUF(n) __attribute__((annotate("m2v.buffer", n)))
#define GID __attribute__((annotate("m2v.builtin", "thread_position_in_grid")))
KERNEL void atomics(device atomic_int *ai BUF(0), device atomic_uint *au BUF(1), device atomic_float *af BUF(2),
                    volatile device atomic_uint *vu BUF(3), device atomic<ulong> *al BUF(4), device float *out BUF(5),
                    threadgroup atomic_int *ti __attribute__((annotate("m2v.threadgroup", 0))),
                    threadgroup atomic_float *tf __attribute__((annotate("m2v.threadgroup", 1))), uint gid GID) {
  // (a function-scope `static threadgroup atomic_int x;` is rejected by clang for any class type: see report)
  if (gid == 0) atomic_store_explicit(ti, 0, memory_order_relaxed);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  out[gid] = int_ops(ai, int(gid)) + int_ops(au, gid) + float_ops(af, 1.5f) + int_ops(vu, 2u) + int_ops(ti, 3) +
             float_ops(tf, 2.0f) + atomic_fetch_max_explicit(al, ulong(gid), memory_order_relaxed) +
             atomic_fetch_min_explicit(al, 5ul, memory_order_relaxed);
  // the usual histogram idiom
  atomic_fetch_add_explicit(au + (gid & 15), 1, memory_order_relaxed);
}
