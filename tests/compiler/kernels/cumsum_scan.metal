// ENTRIES: cumsum_scan
// Block-wide inclusive prefix sum: simd_prefix_inclusive_sum inside simdgroups, threadgroup exchange of the simdgroup
// totals, exclusive scan of those totals.
#include <metal_stdlib>
using namespace metal;

kernel void cumsum_scan(device const float* in [[buffer(0)]], device float* out [[buffer(1)]],
                        device float* block_sums [[buffer(2)]], uint gid [[thread_position_in_grid]],
                        uint lid [[thread_index_in_threadgroup]], uint tg [[threadgroup_position_in_grid]],
                        uint lane [[thread_index_in_simdgroup]], uint sg [[simdgroup_index_in_threadgroup]],
                        uint nsg [[simdgroups_per_threadgroup]]) {
  threadgroup float totals[32];
  float v = in[gid];
  float incl = simd_prefix_inclusive_sum(v);
  if (lane == 31) totals[sg] = incl;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (sg == 0) {
    float t = lane < nsg ? totals[lane] : 0.0f;
    totals[lane] = simd_prefix_exclusive_sum(t);
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  float r = incl + totals[sg];
  out[gid] = r;
  if (lid == nsg * 32 - 1) block_sums[tg] = r;
}
