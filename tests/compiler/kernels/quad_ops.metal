// ENTRIES: quad_ops
// Every quad_ function: reductions (clustered), scans, shuffles, broadcast, votes, quad built-ins.
#include <metal_stdlib>
using namespace metal;

kernel void quad_ops(device const float* in [[buffer(0)]], device float* out [[buffer(1)]],
                     device uint* uout [[buffer(2)]], device int* iout [[buffer(3)]],
                     uint gid [[thread_position_in_grid]], ushort qlane [[thread_index_in_quadgroup]],
                     uint qid [[quadgroup_index_in_threadgroup]], uint nq [[quadgroups_per_threadgroup]]) {
  float x = in[gid];
  float r = quad_sum(x) + quad_product(x) + quad_min(x) + quad_max(x);
  r += quad_prefix_inclusive_sum(x) + quad_prefix_exclusive_sum(x) + quad_prefix_inclusive_product(x) +
       quad_prefix_exclusive_product(x);
  r += quad_shuffle(x, 3 - qlane) + quad_shuffle_up(x, 1) + quad_shuffle_down(x, 1) + quad_shuffle_xor(x, 2) +
       quad_shuffle_rotate_up(x, 1) + quad_shuffle_rotate_down(x, 3) + quad_broadcast(x, 0) + quad_broadcast_first(x);
  out[gid] = r;
  int i = int(gid);
  iout[gid] = quad_and(i) + quad_or(i) + quad_xor(i) + quad_min(i) + quad_max(i) + quad_sum(i);
  bool p = x > 0.0f;
  quad_vote v = quad_ballot(p);
  uint f = (quad_all(p) ? 1u : 0u) | (quad_any(p) ? 2u : 0u) | (quad_is_first() ? 4u : 0u) |
           (uint(quad_vote::vote_t(v)) << 4) | (v.all() ? 256u : 0u) | (uint(quad_vote::vote_t(quad_active_threads_mask())) << 12);
  uout[gid] = f + qid * 65536 + nq;
}
