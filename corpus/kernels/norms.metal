// Layer norm and RMS norm over the last axis, one threadgroup per row, with optional weight (and bias).
#include <metal_stdlib>
using namespace metal;

struct NormParams {
  int axis_size;
  float eps;
  int w_stride;  // 0: broadcast a scalar weight, 1: per-element weight
};

template <int N>
inline float tg_sum(threadgroup float* buf, float v, uint lid) {
  buf[lid] = v;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (uint k = N / 2; k > 0; k >>= 1) {
    if (lid < k) buf[lid] += buf[lid + k];
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  float r = buf[0];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  return r;
}

template <typename T, int N>
[[kernel]] void layer_norm_looped(const device T* x [[buffer(0)]], const device T* w [[buffer(1)]],
                                  const device T* b [[buffer(2)]], device T* out [[buffer(3)]],
                                  constant NormParams& p [[buffer(4)]], uint gid [[threadgroup_position_in_grid]],
                                  uint lid [[thread_position_in_threadgroup]]) {
  threadgroup float buf[N];
  x += size_t(gid) * p.axis_size;
  out += size_t(gid) * p.axis_size;
  float s = 0;
  for (int i = lid; i < p.axis_size; i += N) s += static_cast<float>(x[i]);
  float mean = tg_sum<N>(buf, s, lid) / p.axis_size;
  float v = 0;
  for (int i = lid; i < p.axis_size; i += N) {
    float d = static_cast<float>(x[i]) - mean;
    v += d * d;
  }
  float var = tg_sum<N>(buf, v, lid) / p.axis_size;
  float inv = metal::precise::rsqrt(var + p.eps);
  for (int i = lid; i < p.axis_size; i += N) {
    float y = (static_cast<float>(x[i]) - mean) * inv;
    out[i] = static_cast<T>(y * static_cast<float>(w[i * p.w_stride]) + static_cast<float>(b[i * p.w_stride]));
  }
}

template <typename T>
[[kernel]] void rms_norm_simd(const device T* x [[buffer(0)]], const device T* w [[buffer(1)]],
                              device T* out [[buffer(2)]], constant NormParams& p [[buffer(3)]],
                              uint gid [[threadgroup_position_in_grid]], uint lid [[thread_position_in_threadgroup]],
                              uint lsize [[threads_per_threadgroup]], uint lane [[thread_index_in_simdgroup]],
                              uint sg [[simdgroup_index_in_threadgroup]]) {
  threadgroup float partial[32];
  threadgroup float total;
  x += size_t(gid) * p.axis_size;
  out += size_t(gid) * p.axis_size;
  float acc = 0;
  for (int i = lid; i < p.axis_size; i += lsize) {
    float v = static_cast<float>(x[i]);
    acc += v * v;
  }
  acc = simd_sum(acc);
  if (sg == 0) partial[lane] = 0;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (lane == 0) partial[sg] = acc;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (sg == 0) {
    acc = simd_sum(partial[lane]);
    if (lane == 0) total = metal::precise::rsqrt(acc / p.axis_size + p.eps);
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  float inv = total;
  for (int i = lid; i < p.axis_size; i += lsize)
    out[i] = static_cast<T>(static_cast<float>(x[i]) * inv * static_cast<float>(w[i * p.w_stride]));
}

template <typename T, int N>
[[kernel]] void rms_norm_looped(const device T* x [[buffer(0)]], const device T* w [[buffer(1)]],
                                device T* out [[buffer(2)]], constant NormParams& p [[buffer(3)]],
                                uint gid [[threadgroup_position_in_grid]], uint lid [[thread_position_in_threadgroup]]) {
  threadgroup float buf[N];
  x += size_t(gid) * p.axis_size;
  out += size_t(gid) * p.axis_size;
  float acc = 0;
  for (int i = lid; i < p.axis_size; i += N) {
    float v = static_cast<float>(x[i]);
    acc += v * v;
  }
  float inv = metal::precise::rsqrt(tg_sum<N>(buf, acc, lid) / p.axis_size + p.eps);
  for (int i = lid; i < p.axis_size; i += N)
    out[i] = static_cast<T>(static_cast<float>(x[i]) * inv * static_cast<float>(w[i * p.w_stride]));
}

#define instantiate_norms(tname, T)                                                                  \
  template [[host_name("layer_norm_looped_" #tname)]] [[kernel]] decltype(layer_norm_looped<T, 128>) \
      layer_norm_looped<T, 128>;                                                                     \
  template [[host_name("rms_norm_simd_" #tname)]] [[kernel]] decltype(rms_norm_simd<T>) rms_norm_simd<T>; \
  template [[host_name("rms_norm_looped_" #tname)]] [[kernel]] decltype(rms_norm_looped<T, 128>)     \
      rms_norm_looped<T, 128>;

instantiate_norms(float, float)
instantiate_norms(half, half)
instantiate_norms(bfloat, bfloat)
