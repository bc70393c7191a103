// Row softmax. "looped": a threadgroup per row, online (max, sum) per thread, threadgroup-memory combine.
// "simd": one simdgroup per row (rows packed 4 to a threadgroup), simd_max/simd_sum only.
#include <metal_stdlib>
using namespace metal;

template <typename T, int N>
[[kernel]] void softmax_looped(const device T* in [[buffer(0)]], device T* out [[buffer(1)]],
                               constant int& axis_size [[buffer(2)]], uint gid [[threadgroup_position_in_grid]],
                               uint lid [[thread_position_in_threadgroup]]) {
  threadgroup float tm[N], ts[N];
  size_t off = size_t(gid) * axis_size;
  float m = -INFINITY, s = 0;
  for (int i = lid; i < axis_size; i += N) {
    float x = static_cast<float>(in[off + i]);
    float nm = max(m, x);
    s = s * exp(m - nm) + exp(x - nm);
    m = nm;
  }
  tm[lid] = m;
  ts[lid] = s;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (uint k = N / 2; k > 0; k >>= 1) {
    if (lid < k) {
      float m1 = tm[lid], m2 = tm[lid + k];
      float nm = max(m1, m2);
      ts[lid] = ts[lid] * exp(m1 - nm) + ts[lid + k] * exp(m2 - nm);
      tm[lid] = nm;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  float rm = tm[0], inv = 1.0f / ts[0];
  for (int i = lid; i < axis_size; i += N) out[off + i] = static_cast<T>(exp(static_cast<float>(in[off + i]) - rm) * inv);
}

template <typename T>
[[kernel]] void softmax_simd(const device T* in [[buffer(0)]], device T* out [[buffer(1)]],
                             constant int& axis_size [[buffer(2)]], constant int& nrows [[buffer(3)]],
                             uint tgid [[threadgroup_position_in_grid]], uint lane [[thread_index_in_simdgroup]],
                             uint sg [[simdgroup_index_in_threadgroup]], uint nsg [[simdgroups_per_threadgroup]]) {
  int row = tgid * nsg + sg;
  if (row >= nrows) return;
  const device T* x = in + size_t(row) * axis_size;
  device T* y = out + size_t(row) * axis_size;
  float m = -INFINITY;
  for (int i = lane; i < axis_size; i += 32) m = max(m, static_cast<float>(x[i]));
  m = simd_max(m);
  float s = 0;
  for (int i = lane; i < axis_size; i += 32) s += exp(static_cast<float>(x[i]) - m);
  s = simd_sum(s);
  for (int i = lane; i < axis_size; i += 32) y[i] = static_cast<T>(exp(static_cast<float>(x[i]) - m) / s);
}

#define instantiate_softmax(tname, T)                                                                           \
  template [[host_name("softmax_looped_" #tname)]] [[kernel]] decltype(softmax_looped<T, 128>) softmax_looped<T, 128>; \
  template [[host_name("softmax_simd_" #tname)]] [[kernel]] decltype(softmax_simd<T>) softmax_simd<T>;

instantiate_softmax(float, float)
instantiate_softmax(half, half)
instantiate_softmax(bfloat, bfloat)
