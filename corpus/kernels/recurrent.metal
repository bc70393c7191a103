// Recurrent state updates, one decode step, per head state S[h] of shape [Dk, Dv] (row k, column v):
//  - gated delta rule: S = g * S; S += k (beta * (v - S^T k))^T; o = S^T q.  One simdgroup per (head, v column
//    block); state column in registers, dot products over k with simd_sum.
//  - SSM (Mamba-style, diagonal A): h = exp(dt * A) * h + dt * B * x; y = C . h + D * x. One thread per (head, channel).
//  - RWKV-style (wkv with per-channel decay): S = diag(w) S + k v^T, o = (S_prev + u*k v^T)^T r, threadgroup per head.
#include <metal_stdlib>
using namespace metal;

// Dk = 32 (one lane per k row), Dv columns looped.
[[kernel]] void gated_delta_step(const device float* q [[buffer(0)]], const device float* k [[buffer(1)]],
                                 const device float* v [[buffer(2)]], const device float* g [[buffer(3)]],
                                 const device float* beta [[buffer(4)]], device float* state [[buffer(5)]],
                                 device float* out [[buffer(6)]], constant int& Dv [[buffer(7)]],
                                 uint h [[threadgroup_position_in_grid]], uint lane [[thread_index_in_simdgroup]]) {
  constexpr int Dk = 32;
  float kk = k[h * Dk + lane], qq = q[h * Dk + lane];
  float gh = g[h], bh = beta[h];
  device float* S = state + size_t(h) * Dk * Dv;
  for (int c = 0; c < Dv; ++c) {
    float s = S[lane * Dv + c] * gh;
    float kv = simd_sum(s * kk);  // (S^T k)[c]
    float delta = bh * (v[h * Dv + c] - kv);
    s += kk * delta;
    S[lane * Dv + c] = s;
    float o = simd_sum(s * qq);
    if (lane == 0) out[h * Dv + c] = o;
  }
}

// Dstate = 16 states per channel in registers.
[[kernel]] void ssm_step(const device float* x [[buffer(0)]], const device float* dt [[buffer(1)]],
                         const device float* A [[buffer(2)]], const device float* B [[buffer(3)]],
                         const device float* C [[buffer(4)]], const device float* D [[buffer(5)]],
                         device float* state [[buffer(6)]], device float* y [[buffer(7)]],
                         constant int& channels [[buffer(8)]], uint2 pos [[thread_position_in_grid]]) {
  constexpr int N = 16;
  uint ch = pos.x, head = pos.y;
  uint idx = head * channels + ch;
  float xv = x[idx], d = dt[idx];
  float a = exp(d * A[idx]);
  device float* h = state + size_t(idx) * N;
  float acc = 0;
  for (int n = 0; n < N; ++n) {
    float hn = a * h[n] + d * B[head * N + n] * xv;
    h[n] = hn;
    acc += C[head * N + n] * hn;
  }
  y[idx] = acc + D[ch] * xv;
}

// Threadgroup of D threads per head (thread j owns value column j); r, k staged in threadgroup memory.
[[kernel]] void rwkv_step(const device float* r [[buffer(0)]], const device float* k [[buffer(1)]],
                          const device float* v [[buffer(2)]], const device float* w [[buffer(3)]],
                          const device float* u [[buffer(4)]], device float* state [[buffer(5)]],
                          device float* out [[buffer(6)]], uint h [[threadgroup_position_in_grid]],
                          uint j [[thread_position_in_threadgroup]], uint D [[threads_per_threadgroup]]) {
  threadgroup float rs[64], ks[64], ws[64], us[64];
  rs[j] = r[h * D + j];
  ks[j] = k[h * D + j];
  ws[j] = w[h * D + j];
  us[j] = u[h * D + j];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  float vj = v[h * D + j];
  device float* S = state + size_t(h) * D * D;
  float o = 0;
  for (uint i = 0; i < D; ++i) {
    float kv = ks[i] * vj;
    float s = S[i * D + j];
    o += rs[i] * (s + us[i] * kv);
    S[i * D + j] = ws[i] * s + kv;
  }
  out[h * D + j] = o;
}
