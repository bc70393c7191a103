// Bitonic sort of one row per threadgroup in threadgroup memory (N = 2 * threads, padded with +inf / INT_MAX),
// and top-k: sort descending with indices, keep the first k (values and indices).
#include <metal_stdlib>
using namespace metal;

template <typename T, int N>
[[kernel]] void bitonic_sort(const device T* in [[buffer(0)]], device T* out [[buffer(1)]],
                             constant int& n [[buffer(2)]], uint row [[threadgroup_position_in_grid]],
                             uint lid [[thread_position_in_threadgroup]]) {
  threadgroup T v[N];
  const T pad = metal::numeric_limits<T>::max();
  for (int i = lid; i < N; i += N / 2) v[i] = i < n ? in[row * n + i] : pad;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (int k = 2; k <= N; k <<= 1) {
    for (int j = k >> 1; j > 0; j >>= 1) {
      int i = 2 * lid - (lid & (j - 1));  // lower index of this thread's pair
      int p = i + j;
      bool up = (i & k) == 0;
      T a = v[i], b = v[p];
      if ((a > b) == up) {
        v[i] = b;
        v[p] = a;
      }
      threadgroup_barrier(mem_flags::mem_threadgroup);
    }
  }
  for (int i = lid; i < n; i += N / 2) out[row * n + i] = v[i];
}

[[kernel]] void topk_rows(const device float* in [[buffer(0)]], device float* vals [[buffer(1)]],
                          device uint* idx [[buffer(2)]], constant int& n [[buffer(3)]], constant int& k [[buffer(4)]],
                          uint row [[threadgroup_position_in_grid]], uint lid [[thread_position_in_threadgroup]]) {
  constexpr int N = 512;
  threadgroup float v[N];
  threadgroup uint ix[N];
  for (int i = lid; i < N; i += N / 2) {
    v[i] = i < n ? in[row * n + i] : -INFINITY;
    ix[i] = i;
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (int kk = 2; kk <= N; kk <<= 1) {
    for (int j = kk >> 1; j > 0; j >>= 1) {
      int i = 2 * lid - (lid & (j - 1));
      int p = i + j;
      bool desc = (i & kk) == 0;
      float a = v[i], b = v[p];
      bool swap = desc ? (a < b || (a == b && ix[i] > ix[p])) : (a > b || (a == b && ix[i] < ix[p]));
      if (swap) {
        v[i] = b;
        v[p] = a;
        uint t = ix[i];
        ix[i] = ix[p];
        ix[p] = t;
      }
      threadgroup_barrier(mem_flags::mem_threadgroup);
    }
  }
  if (int(lid) < k) {
    vals[row * k + lid] = v[lid];
    idx[row * k + lid] = ix[lid];
  }
}

template [[host_name("bitonic_sort_float")]] [[kernel]] decltype(bitonic_sort<float, 512>) bitonic_sort<float, 512>;
template [[host_name("bitonic_sort_int")]] [[kernel]] decltype(bitonic_sort<int, 256>) bitonic_sort<int, 256>;
template [[host_name("bitonic_sort_half")]] [[kernel]] decltype(bitonic_sort<half, 512>) bitonic_sort<half, 512>;
