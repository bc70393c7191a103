// ENTRIES: layer_norm_float layer_norm_half
// LayerNorm over the last axis: one threadgroup per row, mean and variance by simd_sum + threadgroup staging,
// optional weight/bias through function constants.
#include <metal_stdlib>
using namespace metal;

constant bool has_w [[function_constant(10)]];

template <typename T>
[[kernel]] void layer_norm(device const T* x [[buffer(0)]], device const T* w [[buffer(1), function_constant(has_w)]],
                           device const T* b [[buffer(2)]], device T* out [[buffer(3)]],
                           constant float& eps [[buffer(4)]], constant uint& axis [[buffer(5)]],
                           uint row [[threadgroup_position_in_grid]], uint lid [[thread_position_in_threadgroup]],
                           uint lsize [[threads_per_threadgroup]], uint lane [[thread_index_in_simdgroup]],
                           uint sg [[simdgroup_index_in_threadgroup]], uint nsg [[simdgroups_per_threadgroup]]) {
  threadgroup float sums[32];
  threadgroup float sq[32];
  x += row * axis;
  out += row * axis;
  float s = 0.0f, s2 = 0.0f;
  for (uint i = lid; i < axis; i += lsize) {
    float v = float(x[i]);
    s += v;
    s2 += v * v;
  }
  s = simd_sum(s);
  s2 = simd_sum(s2);
  if (lane == 0) { sums[sg] = s; sq[sg] = s2; }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  s = simd_sum(lane < nsg ? sums[lane] : 0.0f);
  s2 = simd_sum(lane < nsg ? sq[lane] : 0.0f);
  float mean = s / float(axis);
  float var = max(s2 / float(axis) - mean * mean, 0.0f);
  float inv = metal::precise::rsqrt(var + eps);
  for (uint i = lid; i < axis; i += lsize) {
    float v = (float(x[i]) - mean) * inv;
    if (has_w) v *= float(w[i]);
    out[i] = T(v + float(b[i]));
  }
}
template [[host_name("layer_norm_float")]] [[kernel]] decltype(layer_norm<float>) layer_norm<float>;
template [[host_name("layer_norm_half")]] [[kernel]] decltype(layer_norm<half>) layer_norm<half>;
