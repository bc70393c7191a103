// Threadgroup memory and barriers, no simd functions.
#include <metal_stdlib>
using namespace metal;

// Per-threadgroup sum with a tree in threadgroup memory. Works for partial edge threadgroups: only the live
// threads (tptg of them) take part; the loop starts at the dispatch size's half (a power of two).
kernel void tg_reduce_partial(device const float* x [[buffer(0)]], device float* sums [[buffer(1)]],
                              uint gid [[thread_position_in_grid]], uint tid [[thread_index_in_threadgroup]],
                              uint tptg [[threads_per_threadgroup]], uint dtptg [[dispatch_threads_per_threadgroup]],
                              uint group [[threadgroup_position_in_grid]]) {
  threadgroup float buf[256];
  buf[tid] = x[gid];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (uint s = dtptg / 2; s > 0; s >>= 1) {
    if (tid < s && tid + s < tptg) buf[tid] += buf[tid + s];
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  if (tid == 0) sums[group] = buf[0];
}

// Threads past n return early; the others meet at a barrier and read their right neighbour's value.
kernel void early_return_barrier(device const float* x [[buffer(0)]], device float* y [[buffer(1)]],
                                 constant uint& n [[buffer(2)]], uint gid [[thread_position_in_grid]],
                                 uint tid [[thread_index_in_threadgroup]], uint tptg [[threads_per_threadgroup]]) {
  threadgroup float buf[128];
  if (gid >= n) return;
  buf[tid] = x[gid] * 2.0f;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  float right = (tid + 1 < tptg && gid + 1 < n) ? buf[tid + 1] : 0.0f;
  y[gid] = buf[tid] + right;
}

// 1024-thread threadgroups: sum and max of each block of 1024 values.
kernel void tg_1024(device const float* x [[buffer(0)]], device float* sum_out [[buffer(1)]],
                    device float* max_out [[buffer(2)]], uint gid [[thread_position_in_grid]],
                    uint tid [[thread_index_in_threadgroup]], uint group [[threadgroup_position_in_grid]]) {
  threadgroup float s[1024];
  threadgroup float m[1024];
  s[tid] = x[gid];
  m[tid] = x[gid];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (uint k = 512; k > 0; k >>= 1) {
    if (tid < k) {
      s[tid] += s[tid + k];
      m[tid] = max(m[tid], m[tid + k]);
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  if (tid == 0) {
    sum_out[group] = s[0];
    max_out[group] = m[0];
  }
}

// Dynamic threadgroup memory: [[threadgroup(0)]] holds the group's values (reversed on output), [[threadgroup(1)]]
// one int counter per group. Lengths come from setThreadgroupMemoryLength.
kernel void dyn_tg(device const float* x [[buffer(0)]], device float* y [[buffer(1)]], device int* counts [[buffer(2)]],
                   threadgroup float* vals [[threadgroup(0)]], threadgroup atomic_int* counter [[threadgroup(1)]],
                   uint gid [[thread_position_in_grid]], uint tid [[thread_index_in_threadgroup]],
                   uint tptg [[threads_per_threadgroup]], uint group [[threadgroup_position_in_grid]]) {
  if (tid == 0) atomic_store_explicit(counter, 0, memory_order_relaxed);
  vals[tid] = x[gid];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (x[gid] > 0.0f) atomic_fetch_add_explicit(counter, 1, memory_order_relaxed);
  y[gid] = vals[tptg - 1 - tid];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (tid == 0) counts[group] = atomic_load_explicit(counter, memory_order_relaxed);
}

// 2D partial threadgroups with a barrier: each live thread stores its value in a tile, then sums its tile row
// over the live width (threads_per_threadgroup.x).
kernel void tile_row_sum_2d(device const float* x [[buffer(0)]], device float* y [[buffer(1)]],
                            uint2 gid [[thread_position_in_grid]], uint2 lid [[thread_position_in_threadgroup]],
                            uint2 tptg [[threads_per_threadgroup]], uint2 grid [[threads_per_grid]]) {
  threadgroup float tile[8][16];
  tile[lid.y][lid.x] = x[gid.y * grid.x + gid.x];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  float s = 0.0f;
  for (uint i = 0; i < tptg.x; ++i) s += tile[lid.y][i];
  y[gid.y * grid.x + gid.x] = s;
}
