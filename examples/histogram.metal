// 64-bin histogram of uint values (bin = value % 64): per-threadgroup counts in threadgroup atomics, then one
// device atomic add per bin and threadgroup.
#include <metal_stdlib>
using namespace metal;

constant constexpr uint BINS = 64;

kernel void histogram(device const uint* values [[buffer(0)]], device atomic_uint* hist [[buffer(1)]],
                      constant uint& n [[buffer(2)]], uint gid [[thread_position_in_grid]],
                      uint tid [[thread_index_in_threadgroup]], uint tpg [[threads_per_threadgroup]]) {
  threadgroup atomic_uint local_hist[BINS];
  for (uint b = tid; b < BINS; b += tpg) atomic_store_explicit(&local_hist[b], 0u, memory_order_relaxed);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (gid < n) atomic_fetch_add_explicit(&local_hist[values[gid] % BINS], 1u, memory_order_relaxed);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (uint b = tid; b < BINS; b += tpg) {
    uint c = atomic_load_explicit(&local_hist[b], memory_order_relaxed);
    if (c) atomic_fetch_add_explicit(&hist[b], c, memory_order_relaxed);
  }
}
