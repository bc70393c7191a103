// ENTRIES: gemv_f32 gemv_f16
// Matrix-vector product: one simdgroup per output row, float4 loads, simd_sum reduction.
#include <metal_stdlib>
using namespace metal;

template <typename T>
[[kernel]] void gemv(device const T* mat [[buffer(0)]], device const T* vec_in [[buffer(1)]], device T* out [[buffer(2)]],
                     constant int& in_dim [[buffer(3)]], constant int& out_dim [[buffer(4)]],
                     uint tgid [[threadgroup_position_in_grid]], uint sg [[simdgroup_index_in_threadgroup]],
                     uint lane [[thread_index_in_simdgroup]], uint nsg [[simdgroups_per_threadgroup]]) {
  int row = int(tgid * nsg + sg);
  if (row >= out_dim) return;
  device const T* m = mat + size_t(row) * in_dim;
  float acc = 0.0f;
  for (int i = int(lane) * 4; i < in_dim; i += 32 * 4) {
    vec<T, 4> a = *(device const vec<T, 4>*)(m + i);
    vec<T, 4> b = *(device const vec<T, 4>*)(vec_in + i);
    acc += dot(float4(a), float4(b));
  }
  acc = simd_sum(acc);
  if (simd_is_first()) out[row] = T(acc);
}
template [[host_name("gemv_f32")]] [[kernel]] decltype(gemv<float>) gemv<float>;
template [[host_name("gemv_f16")]] [[kernel]] decltype(gemv<half>) gemv<half>;
