// ENTRIES: sdpa_vector_half
// Single-query attention (decode step): each simdgroup walks keys, online softmax with running max/sum,
// threadgroup combination across simdgroups.
#include <metal_stdlib>
using namespace metal;

template <typename T, int D>
[[kernel]] void sdpa_vector(device const T* q [[buffer(0)]], device const T* keys [[buffer(1)]],
                            device const T* values [[buffer(2)]], device T* out [[buffer(3)]],
                            constant int& n_keys [[buffer(4)]], constant float& scale [[buffer(5)]],
                            uint head [[threadgroup_position_in_grid]], uint sg [[simdgroup_index_in_threadgroup]],
                            uint lane [[thread_index_in_simdgroup]]) {
  constexpr int BN = 4;
  constexpr int PER = D / 32;
  threadgroup float maxs[BN], sums[BN];
  threadgroup float outs[BN][D];
  float qv[PER], o[PER];
  for (int i = 0; i < PER; ++i) { qv[i] = float(q[head * D + lane * PER + i]) * scale; o[i] = 0.0f; }
  float m = -INFINITY, s = 0.0f;
  for (int k = int(sg); k < n_keys; k += BN) {
    device const T* kr = keys + (size_t(head) * n_keys + k) * D + lane * PER;
    float score = 0.0f;
    for (int i = 0; i < PER; ++i) score += qv[i] * float(kr[i]);
    score = simd_sum(score);
    float nm = max(m, score);
    float f = fast::exp(m - nm), e = fast::exp(score - nm);
    s = s * f + e;
    device const T* vr = values + (size_t(head) * n_keys + k) * D + lane * PER;
    for (int i = 0; i < PER; ++i) o[i] = o[i] * f + e * float(vr[i]);
    m = nm;
  }
  if (lane == 0) { maxs[sg] = m; sums[sg] = s; }
  for (int i = 0; i < PER; ++i) outs[sg][lane * PER + i] = o[i];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (sg == 0) {
    float gm = -INFINITY;
    for (int b = 0; b < BN; ++b) gm = max(gm, maxs[b]);
    float total = 0.0f;
    float acc[PER] = {0.0f};
    for (int b = 0; b < BN; ++b) {
      float f = fast::exp(maxs[b] - gm);
      total += sums[b] * f;
      for (int i = 0; i < PER; ++i) acc[i] += outs[b][lane * PER + i] * f;
    }
    for (int i = 0; i < PER; ++i) out[head * D + lane * PER + i] = T(acc[i] / total);
  }
}
template [[host_name("sdpa_vector_half")]] [[kernel]] decltype(sdpa_vector<half, 64>) sdpa_vector<half, 64>;
