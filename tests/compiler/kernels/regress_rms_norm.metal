// ENTRIES: rms_norm_bfloat rms_norm_float
// RMSNorm with bfloat I/O and float accumulation, 4 elements per thread, vectorised loads.
#include <metal_stdlib>
using namespace metal;

template <typename T>
[[kernel]] void rms_norm(device const T* x [[buffer(0)]], device const T* w [[buffer(1)]], device T* out [[buffer(2)]],
                         constant float& eps [[buffer(3)]], constant uint& axis [[buffer(4)]],
                         uint row [[threadgroup_position_in_grid]], uint lid [[thread_position_in_threadgroup]],
                         uint lsize [[threads_per_threadgroup]], uint lane [[thread_index_in_simdgroup]],
                         uint sg [[simdgroup_index_in_threadgroup]]) {
  threadgroup float part[32];
  device const vec<T, 4>* x4 = (device const vec<T, 4>*)(x + row * axis);
  float acc = 0.0f;
  for (uint i = lid; i < axis / 4; i += lsize) {
    float4 v = float4(x4[i]);
    acc += dot(v, v);
  }
  acc = simd_sum(acc);
  if (lane == 0) part[sg] = acc;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (sg == 0) {
    float t = simd_sum(lane < (lsize + 31) / 32 ? part[lane] : 0.0f);
    if (lane == 0) part[0] = metal::rsqrt(t / float(axis) + eps);
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  float scale = part[0];
  device vec<T, 4>* o4 = (device vec<T, 4>*)(out + row * axis);
  device const vec<T, 4>* w4 = (device const vec<T, 4>*)w;
  for (uint i = lid; i < axis / 4; i += lsize) o4[i] = vec<T, 4>(float4(x4[i]) * scale * float4(w4[i]));
}
template [[host_name("rms_norm_bfloat")]] [[kernel]] decltype(rms_norm<bfloat>) rms_norm<bfloat>;
template [[host_name("rms_norm_float")]] [[kernel]] decltype(rms_norm<float>) rms_norm<float>;
