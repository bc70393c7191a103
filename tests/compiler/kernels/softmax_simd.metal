// ENTRIES: softmax_simd
// The benchmark's "typical kernel": a row softmax, one threadgroup per row, simd reductions + threadgroup staging.
#include <metal_stdlib>
using namespace metal;

constant constexpr int SIMD = 32;

kernel void softmax_simd(device const float* x [[buffer(0)]], device float* y [[buffer(1)]],
                         constant int& axis_size [[buffer(2)]],
                         uint row [[threadgroup_position_in_grid]], uint lid [[thread_position_in_threadgroup]],
                         uint tg_size [[threads_per_threadgroup]], uint lane [[thread_index_in_simdgroup]],
                         uint sg [[simdgroup_index_in_threadgroup]]) {
  threadgroup float partial[SIMD];
  device const float* in = x + size_t(row) * axis_size;
  device float* out = y + size_t(row) * axis_size;

  float m = -INFINITY;
  for (int i = lid; i < axis_size; i += tg_size) m = max(m, in[i]);
  m = simd_max(m);
  if (lane == 0) partial[sg] = m;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  m = lane < (tg_size + SIMD - 1) / SIMD ? partial[lane] : -INFINITY;
  m = simd_max(m);
  threadgroup_barrier(mem_flags::mem_threadgroup);

  float s = 0.0f;
  for (int i = lid; i < axis_size; i += tg_size) s += fast::exp(in[i] - m);
  s = simd_sum(s);
  if (lane == 0) partial[sg] = s;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  s = lane < (tg_size + SIMD - 1) / SIMD ? partial[lane] : 0.0f;
  s = simd_sum(s);
  float inv = 1.0f / s;
  for (int i = lid; i < axis_size; i += tg_size) out[i] = fast::exp(in[i] - m) * inv;
}
