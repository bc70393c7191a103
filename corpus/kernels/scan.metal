// Prefix sums over rows of up to 1024 elements, one threadgroup per row.
// simd variants: simd_prefix_inclusive/exclusive_sum within simdgroups, simdgroup totals scanned through
// threadgroup memory. tg variant: Hillis-Steele scan in threadgroup memory with double buffering (ping-pong
// between two threadgroup arrays selected by pointer).
#include <metal_stdlib>
using namespace metal;

template <bool inclusive>
[[kernel]] void scan_simd(const device float* in [[buffer(0)]], device float* out [[buffer(1)]],
                          constant uint& n [[buffer(2)]], uint row [[threadgroup_position_in_grid]],
                          uint lid [[thread_position_in_threadgroup]], uint lane [[thread_index_in_simdgroup]],
                          uint sg [[simdgroup_index_in_threadgroup]], uint nsg [[simdgroups_per_threadgroup]]) {
  threadgroup float totals[32];
  float x = lid < n ? in[row * n + lid] : 0.0f;
  float incl = simd_prefix_inclusive_sum(x);
  float excl = simd_prefix_exclusive_sum(x);
  if (lane == 31) totals[sg] = incl;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (sg == 0) {
    float t = lane < nsg ? totals[lane] : 0.0f;
    totals[lane] = simd_prefix_exclusive_sum(t);
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  float r = (inclusive ? incl : excl) + totals[sg];
  if (lid < n) out[row * n + lid] = r;
}

template <typename T, bool inclusive>
[[kernel]] void scan_tg(const device T* in [[buffer(0)]], device T* out [[buffer(1)]], constant uint& n [[buffer(2)]],
                        uint row [[threadgroup_position_in_grid]], uint lid [[thread_position_in_threadgroup]],
                        uint tpg [[threads_per_threadgroup]]) {
  threadgroup T buf_a[256];
  threadgroup T buf_b[256];
  threadgroup T* src = buf_a;
  threadgroup T* dst = buf_b;
  T x = lid < n ? in[row * n + lid] : T(0);
  src[lid] = inclusive ? x : (lid > 0 && lid - 1 < n ? in[row * n + lid - 1] : T(0));
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (uint off = 1; off < tpg; off <<= 1) {
    dst[lid] = lid >= off ? src[lid] + src[lid - off] : src[lid];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    threadgroup T* t = src;
    src = dst;
    dst = t;
  }
  if (lid < n) out[row * n + lid] = src[lid];
}

template [[host_name("scan_simd_inclusive")]] [[kernel]] decltype(scan_simd<true>) scan_simd<true>;
template [[host_name("scan_simd_exclusive")]] [[kernel]] decltype(scan_simd<false>) scan_simd<false>;
template [[host_name("scan_tg_inclusive_float")]] [[kernel]] decltype(scan_tg<float, true>) scan_tg<float, true>;
template [[host_name("scan_tg_exclusive_float")]] [[kernel]] decltype(scan_tg<float, false>) scan_tg<float, false>;
template [[host_name("scan_tg_inclusive_int")]] [[kernel]] decltype(scan_tg<int, true>) scan_tg<int, true>;

// The same Hillis-Steele scan with the double buffer indexed by parity instead of selected by pointer.
[[kernel]] void scan_tg_parity(const device float* in [[buffer(0)]], device float* out [[buffer(1)]],
                               constant uint& n [[buffer(2)]], uint row [[threadgroup_position_in_grid]],
                               uint lid [[thread_position_in_threadgroup]], uint tpg [[threads_per_threadgroup]]) {
  threadgroup float buf[2][256];
  uint cur = 0;
  buf[0][lid] = lid < n ? in[row * n + lid] : 0.0f;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (uint off = 1; off < tpg; off <<= 1) {
    buf[cur ^ 1][lid] = lid >= off ? buf[cur][lid] + buf[cur][lid - off] : buf[cur][lid];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    cur ^= 1;
  }
  if (lid < n) out[row * n + lid] = buf[cur][lid];
}
