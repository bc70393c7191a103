// Single-query attention decode with grouped KV heads (GQA): out[h] = softmax(q[h] . K[kvh]^T * scale) V[kvh],
// kvh = h / (heads / kv_heads). Online softmax over the keys.
#include <metal_stdlib>
using namespace metal;

struct AttnParams {
  int heads, kv_heads, seq_len, head_dim;
  float scale;
};

// One simdgroup per query head; each lane owns head_dim / 32 dimensions; scores via simd_sum.
[[kernel]] void sdpa_decode_simd(const device float* q [[buffer(0)]], const device float* k [[buffer(1)]],
                                 const device float* v [[buffer(2)]], device float* out [[buffer(3)]],
                                 constant AttnParams& p [[buffer(4)]], uint h [[threadgroup_position_in_grid]],
                                 uint lane [[thread_index_in_simdgroup]]) {
  constexpr int MAXD = 4;  // head_dim <= 128
  int per = p.head_dim / 32;
  int kvh = h / (p.heads / p.kv_heads);
  float qv[MAXD], acc[MAXD];
  for (int j = 0; j < per; ++j) {
    qv[j] = q[h * p.head_dim + lane * per + j] * p.scale;
    acc[j] = 0;
  }
  float m = -INFINITY, l = 0;
  for (int t = 0; t < p.seq_len; ++t) {
    const device float* kt = k + (size_t(kvh) * p.seq_len + t) * p.head_dim + lane * per;
    float s = 0;
    for (int j = 0; j < per; ++j) s += qv[j] * kt[j];
    s = simd_sum(s);
    float nm = max(m, s);
    float corr = exp(m - nm), w = exp(s - nm);
    l = l * corr + w;
    const device float* vt = v + (size_t(kvh) * p.seq_len + t) * p.head_dim + lane * per;
    for (int j = 0; j < per; ++j) acc[j] = acc[j] * corr + w * vt[j];
    m = nm;
  }
  for (int j = 0; j < per; ++j) out[h * p.head_dim + lane * per + j] = acc[j] / l;
}

// One threadgroup of head_dim threads per head; scores reduced through threadgroup memory (no simd functions).
[[kernel]] void sdpa_decode_tg(const device float* q [[buffer(0)]], const device float* k [[buffer(1)]],
                               const device float* v [[buffer(2)]], device float* out [[buffer(3)]],
                               constant AttnParams& p [[buffer(4)]], uint h [[threadgroup_position_in_grid]],
                               uint d [[thread_position_in_threadgroup]]) {
  threadgroup float red[128];
  int kvh = h / (p.heads / p.kv_heads);
  float qd = q[h * p.head_dim + d] * p.scale;
  float m = -INFINITY, l = 0, acc = 0;
  for (int t = 0; t < p.seq_len; ++t) {
    size_t row = (size_t(kvh) * p.seq_len + t) * p.head_dim;
    red[d] = qd * k[row + d];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (int s = p.head_dim / 2; s > 0; s >>= 1) {
      if (int(d) < s) red[d] += red[d + s];
      threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    float score = red[0];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    float nm = max(m, score);
    float corr = exp(m - nm), w = exp(score - nm);
    l = l * corr + w;
    acc = acc * corr + w * v[row + d];
    m = nm;
  }
  out[h * p.head_dim + d] = acc / l;
}
