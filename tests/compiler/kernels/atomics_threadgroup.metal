// ENTRIES: atomics_threadgroup
// Threadgroup atomics: a histogram in threadgroup memory flushed to device memory with device atomics.
#include <metal_stdlib>
using namespace metal;

kernel void atomics_threadgroup(device const uint* keys [[buffer(0)]], device atomic_uint* hist [[buffer(1)]],
                                device atomic_int* minmax [[buffer(2)]], constant uint& n [[buffer(3)]],
                                uint gid [[thread_position_in_grid]], uint lid [[thread_index_in_threadgroup]],
                                uint tgsize [[threads_per_threadgroup]]) {
  threadgroup atomic_uint local_hist[64];
  threadgroup atomic_int local_min;
  for (uint i = lid; i < 64; i += tgsize) atomic_store_explicit(&local_hist[i], 0u, memory_order_relaxed);
  if (lid == 0) atomic_store_explicit(&local_min, INT_MAX, memory_order_relaxed);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (gid < n) {
    uint k = keys[gid];
    atomic_fetch_add_explicit(&local_hist[k & 63], 1u, memory_order_relaxed);
    atomic_fetch_min_explicit(&local_min, int(k), memory_order_relaxed);
    atomic_fetch_or_explicit(&local_hist[k & 63], 0u, memory_order_relaxed);
    uint prev = atomic_exchange_explicit(&local_hist[(k >> 6) & 63], k, memory_order_relaxed);
    uint e = prev;
    atomic_compare_exchange_weak_explicit(&local_hist[(k >> 12) & 63], &e, k, memory_order_relaxed, memory_order_relaxed);
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (uint i = lid; i < 64; i += tgsize) {
    uint c = atomic_load_explicit(&local_hist[i], memory_order_relaxed);
    if (c) atomic_fetch_add_explicit(&hist[i], c, memory_order_relaxed);
  }
  if (lid == 0) atomic_fetch_min_explicit(&minmax[0], atomic_load_explicit(&local_min, memory_order_relaxed), memory_order_relaxed);
}
