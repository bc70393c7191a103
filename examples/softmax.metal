// Row softmax, one threadgroup per row; reductions with simd_max / simd_sum across 32-wide simdgroups.
#include <metal_stdlib>
using namespace metal;

kernel void softmax(device const float* x [[buffer(0)]], device float* y [[buffer(1)]],
                    constant uint& cols [[buffer(2)]],
                    uint row [[threadgroup_position_in_grid]], uint tid [[thread_index_in_threadgroup]],
                    uint tpg [[threads_per_threadgroup]], uint lane [[thread_index_in_simdgroup]],
                    uint sg [[simdgroup_index_in_threadgroup]], uint nsg [[simdgroups_per_threadgroup]]) {
  threadgroup float partial[32];
  device const float* in = x + row * cols;
  device float* out = y + row * cols;

  float m = -INFINITY;
  for (uint c = tid; c < cols; c += tpg) m = max(m, in[c]);
  m = simd_max(m);
  if (lane == 0) partial[sg] = m;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  m = simd_max(lane < nsg ? partial[lane] : -INFINITY);
  threadgroup_barrier(mem_flags::mem_threadgroup);

  float s = 0.0f;
  for (uint c = tid; c < cols; c += tpg) s += exp(in[c] - m);
  s = simd_sum(s);
  if (lane == 0) partial[sg] = s;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  s = simd_sum(lane < nsg ? partial[lane] : 0.0f);

  float inv = 1.0f / s;
  for (uint c = tid; c < cols; c += tpg) out[c] = exp(in[c] - m) * inv;
}
