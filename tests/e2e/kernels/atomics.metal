// Atomics on device and threadgroup memory.
#include <metal_stdlib>
using namespace metal;

// Every thread takes a ticket: the old values form a permutation of 0..n-1; the counter ends at n.
kernel void atomic_tickets(device atomic_int* counter [[buffer(0)]], device int* tickets [[buffer(1)]],
                           uint gid [[thread_position_in_grid]]) {
  tickets[gid] = atomic_fetch_add_explicit(counter, 1, memory_order_relaxed);
}

// uint add / max / min on device memory.
kernel void atomic_uint_ops(device const uint* v [[buffer(0)]], device atomic_uint* acc [[buffer(1)]],
                            uint gid [[thread_position_in_grid]]) {
  atomic_fetch_add_explicit(&acc[0], v[gid], memory_order_relaxed);
  atomic_fetch_max_explicit(&acc[1], v[gid], memory_order_relaxed);
  atomic_fetch_min_explicit(&acc[2], v[gid], memory_order_relaxed);
  atomic_fetch_or_explicit(&acc[3], 1u << (v[gid] % 32), memory_order_relaxed);
}

// float atomic add on device memory; inputs are small integers so every order gives the exact sum.
kernel void atomic_float_add(device const float* v [[buffer(0)]], device atomic_float* sums [[buffer(1)]],
                             uint gid [[thread_position_in_grid]]) {
  atomic_fetch_add_explicit(&sums[gid % 4], v[gid], memory_order_relaxed);
}

// Histogram with 32 bins: threadgroup atomics, then device atomics; bins[] counts keys (key % 32).
kernel void histogram32(device const uint* keys [[buffer(0)]], device atomic_uint* bins [[buffer(1)]],
                        uint gid [[thread_position_in_grid]], uint tid [[thread_index_in_threadgroup]],
                        uint tptg [[threads_per_threadgroup]]) {
  threadgroup atomic_uint local[32];
  for (uint b = tid; b < 32; b += tptg) atomic_store_explicit(&local[b], 0u, memory_order_relaxed);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  atomic_fetch_add_explicit(&local[keys[gid] % 32], 1u, memory_order_relaxed);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (uint b = tid; b < 32; b += tptg)
    atomic_fetch_add_explicit(&bins[b], atomic_load_explicit(&local[b], memory_order_relaxed), memory_order_relaxed);
}
