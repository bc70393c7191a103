// ENTRIES: bitonic_sort_float bitonic_sort_uint
// Bitonic sort of one block in threadgroup memory with key/value pairs; loops over stages with barriers.
#include <metal_stdlib>
using namespace metal;

template <typename T>
[[kernel]] void bitonic_sort(device T* keys [[buffer(0)]], device uint* vals [[buffer(1)]],
                             constant uint& n [[buffer(2)]], uint lid [[thread_index_in_threadgroup]],
                             uint tg [[threadgroup_position_in_grid]]) {
  threadgroup T k[512];
  threadgroup uint v[512];
  uint base = tg * 512;
  for (uint i = lid; i < 512; i += 256) {
    bool in_range = base + i < n;
    k[i] = in_range ? keys[base + i] : numeric_limits<T>::max();
    v[i] = in_range ? vals[base + i] : 0u;
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (uint size = 2; size <= 512; size <<= 1) {
    for (uint stride = size >> 1; stride > 0; stride >>= 1) {
      uint i = 2 * lid - (lid & (stride - 1));
      uint j = i + stride;
      bool asc = ((i & size) == 0);
      T a = k[i], b = k[j];
      if ((a > b) == asc) {
        k[i] = b; k[j] = a;
        uint t = v[i]; v[i] = v[j]; v[j] = t;
      }
      threadgroup_barrier(mem_flags::mem_threadgroup);
    }
  }
  for (uint i = lid; i < 512; i += 256)
    if (base + i < n) { keys[base + i] = k[i]; vals[base + i] = v[i]; }
}
template [[host_name("bitonic_sort_float")]] [[kernel]] decltype(bitonic_sort<float>) bitonic_sort<float>;
template [[host_name("bitonic_sort_uint")]] [[kernel]] decltype(bitonic_sort<uint>) bitonic_sort<uint>;
