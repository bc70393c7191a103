// ENTRIES: simd_votes
// simd_ballot, simd_all, simd_any, simd_is_first, simd_active_threads_mask, and elect-style single-lane work.
#include <metal_stdlib>
using namespace metal;

kernel void simd_votes(device const float* in [[buffer(0)]], device ulong* ballots [[buffer(1)]],
                       device uint* flags [[buffer(2)]], device atomic_uint* counter [[buffer(3)]],
                       uint gid [[thread_position_in_grid]], uint sg [[simdgroup_index_in_threadgroup]],
                       uint tgid [[threadgroup_position_in_grid]], uint nsg [[simdgroups_per_threadgroup]]) {
  bool positive = in[gid] > 0.0f;
  simd_vote v = simd_ballot(positive);
  ulong bits = ulong(simd_vote::vote_t(v));
  uint f = (simd_all(positive) ? 1u : 0u) | (simd_any(positive) ? 2u : 0u) | (v.all() ? 4u : 0u) |
           (v.any() ? 8u : 0u);
  if (simd_is_first()) {
    ballots[tgid * nsg + sg] = bits | ulong(simd_vote::vote_t(simd_active_threads_mask())) << 32;
    flags[tgid * nsg + sg] = f;
    atomic_fetch_add_explicit(counter, popcount(uint(bits)), memory_order_relaxed);
  }
}
