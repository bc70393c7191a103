"""metal_kernel bodies in the style of mlx-lm / mlx-vlm / mlx-audio model code, each against a numpy reference.

Written here from the math of each op. Kernels that use simd_* functions are skipped (with the reason) on devices
that refuse 32-wide simdgroups (lavapipe); everything else really runs.
"""
import numpy as np
import pytest

import metal2vk as m2v
from conftest import assert_close, run_simd


def silu(x):
    return x / (1.0 + np.exp(-x))


# 1. RMSNorm + RoPE fused (non-traditional halves), threadgroup-memory reduction, one threadgroup per (token, head).
RMS_ROPE = m2v.metal_kernel(
    name="rms_norm_rope", input_names=["x", "w", "eps", "base", "offset"], output_names=["out"], source="""
    constexpr int HALF = D / 2;
    uint row = threadgroup_position_in_grid.x;
    uint tid = thread_position_in_threadgroup.x;
    uint t = row / H;
    const device T* xr = x + row * D;
    float a = float(xr[tid]);
    float b = float(xr[tid + HALF]);
    threadgroup float partial[HALF];
    partial[tid] = a * a + b * b;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (uint s = HALF / 2; s > 0; s >>= 1) {
      if (tid < s) partial[tid] += partial[tid + s];
      threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    float inv = metal::rsqrt(partial[0] / float(D) + eps);
    a = a * inv * float(w[tid]);
    b = b * inv * float(w[tid + HALF]);
    float theta = float(offset + int(t)) * metal::pow(base, -2.0f * float(tid) / float(D));
    float c = metal::cos(theta), s = metal::sin(theta);
    out[row * D + tid] = T(a * c - b * s);
    out[row * D + tid + HALF] = T(a * s + b * c);
""")


def test_rms_norm_rope_fused(rng):
    T, H, D = 5, 3, 64
    x = rng.standard_normal((T, H, D)).astype(np.float32)
    w = (1 + 0.1 * rng.standard_normal(D)).astype(np.float32)
    eps, base, offset = 1e-5, 10000.0, 7
    (out,) = RMS_ROPE(inputs=[x, w, eps, base, offset], template=[("T", np.float32), ("H", H), ("D", D)],
                      grid=(T * H * D // 2, 1, 1), threadgroup=(D // 2, 1, 1), output_shapes=[x.shape],
                      output_dtypes=[np.float32])
    xn = x / np.sqrt((x.astype(np.float64) ** 2).mean(-1, keepdims=True) + eps) * w
    pos = (offset + np.arange(T))[:, None, None]
    theta = pos * base ** (-2.0 * np.arange(D // 2) / D)
    a, b = xn[..., : D // 2], xn[..., D // 2:]
    ref = np.concatenate([a * np.cos(theta) - b * np.sin(theta), a * np.sin(theta) + b * np.cos(theta)], -1)
    assert_close(out, ref, 2e-4, 2e-4)


# 2. Gated delta-rule recurrent step (Qwen3-Next / Kimi-style linear attention), one thread per (b*h, dv).
GATED_DELTA = m2v.metal_kernel(
    name="gated_delta_step", input_names=["q", "k", "v", "g", "beta", "state_in"], output_names=["y", "state_out"],
    source="""
    uint dv = thread_position_in_grid.x;
    uint bh = thread_position_in_grid.y;
    const device float* s_in = state_in + (bh * Dv + dv) * Dk;
    device float* s_out = state_out + (bh * Dv + dv) * Dk;
    float decay = g[bh];
    float st[Dk];
    float kv = 0.0f;
    for (int i = 0; i < Dk; ++i) {
      st[i] = s_in[i] * decay;
      kv += st[i] * k[bh * Dk + i];
    }
    float delta = (v[bh * Dv + dv] - kv) * beta[bh];
    float o = 0.0f;
    for (int i = 0; i < Dk; ++i) {
      st[i] += k[bh * Dk + i] * delta;
      o += st[i] * q[bh * Dk + i];
      s_out[i] = st[i];
    }
    y[bh * Dv + dv] = o;
""")


def test_gated_delta_step(rng):
    B, H, Dk, Dv = 2, 3, 16, 24
    q = rng.standard_normal((B, H, Dk)).astype(np.float32) / 4
    k = rng.standard_normal((B, H, Dk)).astype(np.float32) / 4
    v = rng.standard_normal((B, H, Dv)).astype(np.float32)
    g = rng.uniform(0.5, 1.0, (B, H)).astype(np.float32)
    beta = rng.uniform(0.0, 1.0, (B, H)).astype(np.float32)
    state = rng.standard_normal((B, H, Dv, Dk)).astype(np.float32)
    y, st = GATED_DELTA(inputs=[q, k, v, g, beta, state], template=[("Dk", Dk), ("Dv", Dv)], grid=(Dv, B * H, 1),
                        threadgroup=(32, 1, 1), output_shapes=[(B, H, Dv), state.shape],
                        output_dtypes=[np.float32, np.float32])
    s = state.astype(np.float64) * g[..., None, None]
    kv = np.einsum("bhvk,bhk->bhv", s, k)
    delta = (v - kv) * beta[..., None]
    s = s + delta[..., None] * k[:, :, None, :]
    ref_y = np.einsum("bhvk,bhk->bhv", s, q)
    assert_close(y, ref_y, 1e-4, 1e-4)
    assert_close(st, s, 1e-5, 1e-5)


# 3. 4-bit affine-quantized GEMV with simd_sum: one simdgroup per output row.
QGEMV = m2v.metal_kernel(
    name="qgemv_4bit", input_names=["w", "scales", "biases", "x"], output_names=["y"], source="""
    uint row = threadgroup_position_in_grid.y;
    uint lane = thread_index_in_simdgroup;
    constexpr int PACKS = K / 8;
    float acc = 0.0f;
    for (int p = lane; p < PACKS; p += 32) {
      uint packed = w[row * PACKS + p];
      int g = (p * 8) / GROUP;
      float sc = float(scales[row * (K / GROUP) + g]);
      float bi = float(biases[row * (K / GROUP) + g]);
      for (int j = 0; j < 8; ++j) {
        float q = float((packed >> (4 * j)) & 0xfu);
        acc += (sc * q + bi) * float(x[p * 8 + j]);
      }
    }
    acc = simd_sum(acc);
    if (lane == 0) y[row] = T(acc);
""")


def test_quantized_gemv_simd_sum(rng):
    N, K, G = 48, 512, 64
    q = rng.integers(0, 16, (N, K)).astype(np.uint32)
    packed = np.zeros((N, K // 8), np.uint32)
    for j in range(8):
        packed |= q[:, j::8] << (4 * j)
    scales = rng.uniform(0.01, 0.1, (N, K // G)).astype(np.float16)
    biases = rng.uniform(-0.5, 0.0, (N, K // G)).astype(np.float16)
    x = rng.standard_normal(K).astype(np.float16)
    (y,) = run_simd(QGEMV, inputs=[packed, scales, biases, x], template=[("T", np.float16), ("K", K), ("GROUP", G)],
                    grid=(32, N, 1), threadgroup=(32, 1, 1), output_shapes=[(N,)], output_dtypes=[np.float16])
    wf = q * np.repeat(scales.astype(np.float64), G, 1) + np.repeat(biases.astype(np.float64), G, 1)
    assert_close(y, wf @ x.astype(np.float64), 1e-2, 2e-2)


# 4. Single-query attention decode over a KV cache with online softmax, GQA, one threadgroup per query head.
ATTN_DECODE = m2v.metal_kernel(
    name="sdpa_decode_online", input_names=["q", "keys", "values", "scale", "L"], output_names=["out"], source="""
    uint h = threadgroup_position_in_grid.x;
    uint tid = thread_position_in_threadgroup.x;
    uint kvh = h / (HQ / HKV);
    float qv[D];
    for (int d = 0; d < D; ++d) qv[d] = float(q[h * D + d]) * scale;
    float m = -INFINITY, l = 0.0f, acc[D];
    for (int d = 0; d < D; ++d) acc[d] = 0.0f;
    for (int j = tid; j < L; j += TG) {
      const device T* kr = keys + (kvh * L + j) * D;
      const device T* vr = values + (kvh * L + j) * D;
      float s = 0.0f;
      for (int d = 0; d < D; ++d) s += qv[d] * float(kr[d]);
      float m_new = metal::max(m, s);
      float corr = metal::exp(m - m_new);
      float p = metal::exp(s - m_new);
      l = l * corr + p;
      for (int d = 0; d < D; ++d) acc[d] = acc[d] * corr + p * float(vr[d]);
      m = m_new;
    }
    threadgroup float tm[TG], tl[TG], tacc[TG * D];
    tm[tid] = m;
    tl[tid] = l;
    for (int d = 0; d < D; ++d) tacc[tid * D + d] = acc[d];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    float M = -INFINITY;
    for (int t = 0; t < TG; ++t) M = metal::max(M, tm[t]);
    float denom = 0.0f;
    for (int t = 0; t < TG; ++t) denom += tl[t] * metal::exp(tm[t] - M);   // exp(-inf) == 0 for idle threads
    for (int d = tid; d < D; d += TG) {
      float num = 0.0f;
      for (int t = 0; t < TG; ++t) num += tacc[t * D + d] * metal::exp(tm[t] - M);
      out[h * D + d] = T(num / denom);
    }
""")


def test_attention_decode_online_softmax(rng):
    HQ, HKV, L, D, TG = 8, 2, 21, 32, 32  # L < TG: some threads see no key at all (m = -inf)
    q = rng.standard_normal((HQ, D)).astype(np.float32)
    keys = rng.standard_normal((HKV, L, D)).astype(np.float32)
    values = rng.standard_normal((HKV, L, D)).astype(np.float32)
    scale = 1.0 / np.sqrt(D)
    (out,) = ATTN_DECODE(inputs=[q, keys, values, float(scale), L],
                         template=[("T", np.float32), ("HQ", HQ), ("HKV", HKV), ("D", D), ("TG", TG)],
                         grid=(HQ * TG, 1, 1), threadgroup=(TG, 1, 1), output_shapes=[(HQ, D)],
                         output_dtypes=[np.float32])
    kr = np.repeat(keys, HQ // HKV, 0).astype(np.float64)
    vr = np.repeat(values, HQ // HKV, 0).astype(np.float64)
    s = np.einsum("hd,hld->hl", q, kr) * scale
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    assert_close(out, np.einsum("hl,hld->hd", p, vr), 1e-4, 1e-5)


# 5. MoE top-k routing: softmax over experts, top-k by repeated argmax, renormalised weights.
TOPK_ROUTE = m2v.metal_kernel(
    name="moe_topk_route", input_names=["logits"], output_names=["inds", "weights"], source="""
    uint t = thread_position_in_grid.x;
    const device float* lg = logits + t * E;
    float mx = -INFINITY;
    for (int e = 0; e < E; ++e) mx = metal::max(mx, lg[e]);
    float p[E];
    float z = 0.0f;
    for (int e = 0; e < E; ++e) { p[e] = metal::exp(lg[e] - mx); z += p[e]; }
    bool taken[E];
    for (int e = 0; e < E; ++e) taken[e] = false;
    float wsum = 0.0f;
    for (int j = 0; j < TOPK; ++j) {
      int best = -1;
      float bv = -1.0f;
      for (int e = 0; e < E; ++e) {
        if (!taken[e] && p[e] > bv) { bv = p[e]; best = e; }
      }
      taken[best] = true;
      inds[t * TOPK + j] = best;
      weights[t * TOPK + j] = bv / z;
      wsum += bv / z;
    }
    if (NORM) {
      for (int j = 0; j < TOPK; ++j) weights[t * TOPK + j] /= wsum;
    }
""")


def test_moe_topk_routing(rng):
    T, E, K = 19, 16, 4
    logits = rng.standard_normal((T, E)).astype(np.float32) * 2
    inds, weights = TOPK_ROUTE(inputs=[logits], template=[("E", E), ("TOPK", K), ("NORM", True)], grid=(T, 1, 1),
                               threadgroup=(8, 1, 1), output_shapes=[(T, K), (T, K)],
                               output_dtypes=[np.int32, np.float32])
    p = np.exp(logits - logits.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    ref_i = np.argsort(-p, -1)[:, :K]
    ref_w = np.take_along_axis(p, ref_i, -1)
    ref_w /= ref_w.sum(-1, keepdims=True)
    np.testing.assert_array_equal(inds, ref_i)
    assert_close(weights, ref_w, 1e-5, 1e-6)


# 6. Embedding-gradient scatter-add with atomic outputs (init_value=0).
EMBED_BWD = m2v.metal_kernel(
    name="embedding_backward", input_names=["ids", "grad"], output_names=["dtable"], atomic_outputs=True, source="""
    uint d = thread_position_in_grid.x;
    uint n = thread_position_in_grid.y;
    int row = ids[n];
    atomic_fetch_add_explicit(&dtable[row * D + d], grad[n * D + d], memory_order_relaxed);
""")


def test_embedding_backward_scatter_add(rng):
    N, V, D = 300, 11, 24
    ids = rng.integers(0, V, N).astype(np.int32)
    grad = rng.standard_normal((N, D)).astype(np.float32)
    (dt,) = EMBED_BWD(inputs=[ids, grad], template=[("D", D)], grid=(D, N, 1), threadgroup=(8, 4, 1),
                      output_shapes=[(V, D)], output_dtypes=[np.float32], init_value=0)
    ref = np.zeros((V, D))
    np.add.at(ref, ids, grad)
    assert_close(dt, ref, 1e-4, 1e-4)


# 7. SwiGLU activation in bfloat16.
SWIGLU = m2v.metal_kernel(name="swiglu_bf16", input_names=["gate", "up"], output_names=["out"], source="""
    uint i = thread_position_in_grid.x;
    float g = float(gate[i]);
    float u = float(up[i]);
    out[i] = bfloat16_t(g / (1.0f + metal::exp(-g)) * u);
""")


def test_swiglu_bfloat16(rng):
    n = 1000
    g = m2v.to_bfloat16(rng.standard_normal(n) * 3)
    u = m2v.to_bfloat16(rng.standard_normal(n))
    (out,) = SWIGLU(inputs=[g, u], grid=(n, 1, 1), threadgroup=(128, 1, 1), output_shapes=[(n,)],
                    output_dtypes=["bfloat16"])
    gf, uf = m2v.from_bfloat16(g).astype(np.float64), m2v.from_bfloat16(u).astype(np.float64)
    assert_close(m2v.from_bfloat16(out), silu(gf) * uf, 1e-2, 1e-2)


# 8. LayerNorm over float16 rows: two threadgroup reductions (mean, variance).
LAYERNORM = m2v.metal_kernel(
    name="layer_norm_f16", input_names=["x", "w", "b"], output_names=["out"], source="""
    uint row = threadgroup_position_in_grid.x;
    uint tid = thread_position_in_threadgroup.x;
    uint tg = threads_per_threadgroup.x;
    threadgroup float red[256];
    float s = 0.0f;
    for (uint i = tid; i < uint(N); i += tg) s += float(x[row * N + i]);
    red[tid] = s;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (uint k = tg / 2; k > 0; k >>= 1) {
      if (tid < k) red[tid] += red[tid + k];
      threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    float mean = red[0] / N;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    float v = 0.0f;
    for (uint i = tid; i < uint(N); i += tg) { float d = float(x[row * N + i]) - mean; v += d * d; }
    red[tid] = v;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (uint k = tg / 2; k > 0; k >>= 1) {
      if (tid < k) red[tid] += red[tid + k];
      threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    float inv = metal::rsqrt(red[0] / N + 1e-5f);
    for (uint i = tid; i < uint(N); i += tg)
      out[row * N + i] = half((float(x[row * N + i]) - mean) * inv * float(w[i]) + float(b[i]));
""")


def test_layer_norm_float16(rng):
    R, N = 6, 300
    x = (rng.standard_normal((R, N)) * 2 + 1).astype(np.float16)
    w = rng.standard_normal(N).astype(np.float16)
    b = rng.standard_normal(N).astype(np.float16)
    (out,) = LAYERNORM(inputs=[x, w, b], template=[("N", N)], grid=(R * 64, 1, 1), threadgroup=(64, 1, 1),
                       output_shapes=[(R, N)], output_dtypes=[np.float16])
    xf = x.astype(np.float64)
    ref = (xf - xf.mean(-1, keepdims=True)) / np.sqrt(xf.var(-1, keepdims=True) + 1e-5) * w + b
    assert_close(out, ref, 5e-3, 1e-2)


# 9. Causal depthwise conv1d decode step with rolling state (Mamba / short-conv blocks).
CONV_UPDATE = m2v.metal_kernel(
    name="causal_conv1d_update", input_names=["x", "conv_state", "weight", "bias"], output_names=["y", "new_state"],
    source="""
    uint c = thread_position_in_grid.x;
    uint b = thread_position_in_grid.y;
    if (c >= uint(C)) return;
    const device float* st = conv_state + (b * C + c) * (W - 1);
    device float* nst = new_state + (b * C + c) * (W - 1);
    float acc = bias[c];
    for (int j = 0; j < W - 1; ++j) acc += st[j] * weight[c * W + j];
    float xv = x[b * C + c];
    acc += xv * weight[c * W + W - 1];
    for (int j = 0; j < W - 2; ++j) nst[j] = st[j + 1];
    nst[W - 2] = xv;
    y[b * C + c] = acc / (1.0f + metal::exp(-acc));
""")


def test_causal_conv1d_update(rng):
    B, C, W = 3, 40, 4
    x = rng.standard_normal((B, C)).astype(np.float32)
    st = rng.standard_normal((B, C, W - 1)).astype(np.float32)
    w = rng.standard_normal((C, W)).astype(np.float32)
    bias = rng.standard_normal(C).astype(np.float32)
    y, nst = CONV_UPDATE(inputs=[x, st, w, bias], template=[("C", C), ("W", W)], grid=(64, B, 1),
                         threadgroup=(32, 1, 1), output_shapes=[(B, C), st.shape],
                         output_dtypes=[np.float32, np.float32])
    full = np.concatenate([st, x[..., None]], -1)
    acc = (full * w).sum(-1) + bias
    assert_close(y, silu(acc), 1e-5, 1e-5)
    np.testing.assert_array_equal(nst, full[..., 1:])


# 10. Masked softmax (-inf from a bool mask), threadgroup max/sum reductions.
MASKED_SOFTMAX = m2v.metal_kernel(
    name="masked_softmax", input_names=["scores", "mask"], output_names=["probs"], source="""
    uint row = threadgroup_position_in_grid.x;
    uint tid = thread_position_in_threadgroup.x;
    threadgroup float red[TG];
    float vals[(N + TG - 1) / TG];
    float mx = -INFINITY;
    for (int j = 0, i = tid; i < N; i += TG, ++j) {
      vals[j] = mask[row * N + i] ? float(scores[row * N + i]) : -INFINITY;
      mx = metal::max(mx, vals[j]);
    }
    red[tid] = mx;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (int k = TG / 2; k > 0; k >>= 1) {
      if (int(tid) < k) red[tid] = metal::max(red[tid], red[tid + k]);
      threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    mx = red[0];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    float s = 0.0f;
    for (int j = 0, i = tid; i < N; i += TG, ++j) { vals[j] = metal::exp(vals[j] - mx); s += vals[j]; }
    red[tid] = s;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (int k = TG / 2; k > 0; k >>= 1) {
      if (int(tid) < k) red[tid] += red[tid + k];
      threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    float inv = 1.0f / red[0];
    for (int j = 0, i = tid; i < N; i += TG, ++j) probs[row * N + i] = vals[j] * inv;
""")


def test_masked_softmax_relies_on_exp_minus_inf(rng):
    R, N, TG = 7, 100, 32
    scores = rng.standard_normal((R, N)).astype(np.float32) * 4
    mask = rng.random((R, N)) > 0.3
    mask[:, 0] = True
    (p,) = MASKED_SOFTMAX(inputs=[scores, mask], template=[("N", N), ("TG", TG)], grid=(R * TG, 1, 1),
                          threadgroup=(TG, 1, 1), output_shapes=[(R, N)], output_dtypes=[np.float32])
    s = np.where(mask, scores.astype(np.float64), -np.inf)
    ref = np.exp(s - s.max(-1, keepdims=True))
    ref /= ref.sum(-1, keepdims=True)
    assert_close(p, ref, 1e-5, 1e-7)
    assert (p[~mask] == 0).all()


# 11. RoPE, traditional (interleaved) or not, float16, by a template bool; 3-D grid.
ROPE = m2v.metal_kernel(name="rope_f16", input_names=["x", "offset", "scale"], output_names=["out"], source="""
    uint i = thread_position_in_grid.x;       // pair index
    uint t = thread_position_in_grid.y;       // position
    uint h = thread_position_in_grid.z;       // head
    uint L = threads_per_grid.y;
    constexpr int HALF = D / 2;
    uint base_idx = (h * L + t) * D;
    uint i0 = TRADITIONAL ? 2 * i : i;
    uint i1 = TRADITIONAL ? 2 * i + 1 : i + HALF;
    float theta = scale * float(offset + int(t)) * metal::exp2(-float(i) / float(HALF) * metal::log2(10000.0f));
    float c = metal::cos(theta), s = metal::sin(theta);
    float a = float(x[base_idx + i0]), b = float(x[base_idx + i1]);
    out[base_idx + i0] = half(a * c - b * s);
    out[base_idx + i1] = half(a * s + b * c);
""")


@pytest.mark.parametrize("traditional", [False, True])
def test_rope_float16(rng, traditional):
    H, L, D = 3, 9, 32
    x = rng.standard_normal((H, L, D)).astype(np.float16)
    offset, scale = 5, 0.5
    (out,) = ROPE(inputs=[x, offset, scale], template=[("D", D), ("TRADITIONAL", traditional)],
                  grid=(D // 2, L, H), threadgroup=(16, 2, 1), output_shapes=[x.shape], output_dtypes=[np.float16])
    theta = scale * (offset + np.arange(L))[:, None] * 10000.0 ** (-np.arange(D // 2) / (D // 2))
    xf = x.astype(np.float64)
    if traditional:
        a, b = xf[..., 0::2], xf[..., 1::2]
    else:
        a, b = xf[..., : D // 2], xf[..., D // 2:]
    ra, rb = a * np.cos(theta) - b * np.sin(theta), a * np.sin(theta) + b * np.cos(theta)
    ref = np.empty_like(xf)
    if traditional:
        ref[..., 0::2], ref[..., 1::2] = ra, rb
    else:
        ref[..., : D // 2], ref[..., D // 2:] = ra, rb
    assert_close(out, ref, 5e-3, 5e-3)


# 12. Greedy sampling: argmax over the vocabulary with a threadgroup (value, index) reduction.
ARGMAX = m2v.metal_kernel(name="argmax_rows", input_names=["logits", "V"], output_names=["tok"], source="""
    uint row = threadgroup_position_in_grid.x;
    uint tid = thread_position_in_threadgroup.x;
    threadgroup float bv[TG];
    threadgroup int bi[TG];
    float best = -INFINITY;
    int idx = 0x7fffffff;
    for (int i = tid; i < V; i += TG) {
      float v = float(logits[row * V + i]);
      if (v > best) { best = v; idx = i; }
    }
    bv[tid] = best;
    bi[tid] = idx;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (int k = TG / 2; k > 0; k >>= 1) {
      if (int(tid) < k) {
        float ov = bv[tid + k];
        int oi = bi[tid + k];
        if (ov > bv[tid] || (ov == bv[tid] && oi < bi[tid])) { bv[tid] = ov; bi[tid] = oi; }
      }
      threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    if (tid == 0) tok[row] = uint(bi[0]);
""")


def test_argmax_sampling(rng):
    R, V, TG = 5, 5003, 128
    logits = m2v.to_bfloat16(rng.standard_normal((R, V)) * 3)
    (tok,) = ARGMAX(inputs=[logits, V], template=[("TG", TG)], grid=(R * TG, 1, 1), threadgroup=(TG, 1, 1),
                    output_shapes=[(R,)], output_dtypes=[np.uint32])
    np.testing.assert_array_equal(tok, np.argmax(m2v.from_bfloat16(logits), -1))


# 13. KV-cache write of a strided (transposed) update, ensure_row_contiguous=False, elem_to_loc with uint3.
KV_UPDATE = m2v.metal_kernel(
    name="kv_cache_update", input_names=["cache", "upd", "offset"], output_names=["out"],
    ensure_row_contiguous=False, source="""
    // grid: (D, S_new, B*H); the update is read through its own strides
    uint d = thread_position_in_grid.x, s = thread_position_in_grid.y, bh = thread_position_in_grid.z;
    int64_t src = elem_to_loc(uint3(d, s, bh), upd_shape, upd_strides, upd_ndim);
    uint dst = (bh * S + uint(offset) + s) * D + d;
    out[dst] = upd[src];
""")
KV_COPY = m2v.metal_kernel(name="kv_cache_copy", input_names=["cache"], output_names=["out"], source="""
    uint i = thread_position_in_grid.x;
    out[i] = cache[i];
""")


def test_kv_cache_update_strided(rng):
    B, H, S, D, Snew, off = 2, 3, 16, 8, 4, 5
    cache = rng.standard_normal((B, H, S, D)).astype(np.float32)
    upd_bshd = rng.standard_normal((B, Snew, H, D)).astype(np.float32)
    upd = upd_bshd.transpose(0, 2, 1, 3)  # (B, H, Snew, D) view, not contiguous
    (out,) = KV_COPY(inputs=[cache], grid=(cache.size, 1, 1), threadgroup=(256, 1, 1), output_shapes=[cache.shape],
                     output_dtypes=[np.float32])
    (out2,) = KV_UPDATE(inputs=[out, upd, off], template=[("S", S), ("D", D)], grid=(D, Snew, B * H),
                        threadgroup=(8, 4, 1), output_shapes=[cache.shape], output_dtypes=[np.float32],
                        init_value=0)
    ref = np.zeros_like(cache)
    ref[:, :, off:off + Snew] = upd
    np.testing.assert_array_equal(out2, ref)
    np.testing.assert_array_equal(out, cache)


# 14. Mamba-2 selective state update (one token), one thread per (head, head_dim).
SSM_UPDATE = m2v.metal_kernel(
    name="ssm_update", input_names=["state", "x", "dt", "A", "Bm", "Cm", "Dskip"], output_names=["y", "new_state"],
    source="""
    uint p = thread_position_in_grid.x;
    uint h = thread_position_in_grid.y;
    float dtv = dt[h];
    dtv = dtv > 20.0f ? dtv : metal::log(1.0f + metal::exp(dtv));   // softplus
    float dA = metal::exp(dtv * A[h]);
    float xv = x[h * P + p];
    float acc = 0.0f;
    for (int n = 0; n < N; ++n) {
      uint i = (h * P + p) * N + n;
      float s = state[i] * dA + dtv * Bm[n] * xv;
      new_state[i] = s;
      acc += s * Cm[n];
    }
    y[h * P + p] = acc + Dskip[h] * xv;
""")


def test_mamba2_ssm_update(rng):
    Hh, P, N = 4, 16, 32
    state = rng.standard_normal((Hh, P, N)).astype(np.float32)
    x = rng.standard_normal((Hh, P)).astype(np.float32)
    dt = rng.standard_normal(Hh).astype(np.float32)
    A = -rng.uniform(0.5, 2, Hh).astype(np.float32)
    Bm = rng.standard_normal(N).astype(np.float32)
    Cm = rng.standard_normal(N).astype(np.float32)
    Dk = rng.standard_normal(Hh).astype(np.float32)
    y, ns = SSM_UPDATE(inputs=[state, x, dt, A, Bm, Cm, Dk], template=[("P", P), ("N", N)], grid=(P, Hh, 1),
                       threadgroup=(16, 2, 1), output_shapes=[(Hh, P), state.shape],
                       output_dtypes=[np.float32, np.float32])
    sp = np.log1p(np.exp(dt.astype(np.float64)))
    dA = np.exp(sp * A)
    s = state * dA[:, None, None] + (sp[:, None, None] * Bm[None, None, :] * x[..., None])
    assert_close(ns, s, 1e-5, 1e-5)
    assert_close(y, (s * Cm).sum(-1) + Dk[:, None] * x, 1e-4, 1e-4)


# 15. Dequantize 4-bit affine weights (group size 32) to float16, one thread per packed word.
DEQUANT = m2v.metal_kernel(
    name="dequantize_4bit", input_names=["w", "scales", "biases"], output_names=["out"], source="""
    uint word = thread_position_in_grid.x;
    uint row = thread_position_in_grid.y;
    uint packed = w[row * (K / 8) + word];
    uint g = (word * 8) / GROUP;
    float sc = float(scales[row * (K / GROUP) + g]);
    float bi = float(biases[row * (K / GROUP) + g]);
    MLX_MTL_PRAGMA_UNROLL
    for (int j = 0; j < 8; ++j)
      out[row * K + word * 8 + j] = half(sc * float((packed >> (4 * j)) & 0xf) + bi);
""")


def test_dequantize_4bit(rng):
    N, K, G = 10, 256, 32
    q = rng.integers(0, 16, (N, K)).astype(np.uint32)
    packed = np.zeros((N, K // 8), np.uint32)
    for j in range(8):
        packed |= q[:, j::8] << (4 * j)
    scales = rng.uniform(0.01, 0.1, (N, K // G)).astype(np.float16)
    biases = rng.uniform(-1, 0, (N, K // G)).astype(np.float16)
    (out,) = DEQUANT(inputs=[packed, scales, biases], template=[("K", K), ("GROUP", G)], grid=(K // 8, N, 1),
                     threadgroup=(32, 1, 1), output_shapes=[(N, K)], output_dtypes=[np.float16])
    ref = q * np.repeat(scales.astype(np.float64), G, 1) + np.repeat(biases.astype(np.float64), G, 1)
    assert_close(out, ref, 2e-3, 2e-3)


# 16. RMSNorm with simd_sum + threadgroup partials (the shape of MLX's own rms kernel).
RMS_SIMD = m2v.metal_kernel(name="rms_norm_simd", input_names=["x", "w"], output_names=["out"], source="""
    uint row = threadgroup_position_in_grid.x;
    uint tid = thread_position_in_threadgroup.x;
    threadgroup float partial[32];
    float s = 0.0f;
    for (int i = tid; i < N; i += TG) { float v = float(x[row * N + i]); s += v * v; }
    s = simd_sum(s);
    if (thread_index_in_simdgroup == 0) partial[simdgroup_index_in_threadgroup] = s;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (simdgroup_index_in_threadgroup == 0) {
      float t = thread_index_in_simdgroup < TG / 32 ? partial[thread_index_in_simdgroup] : 0.0f;
      t = simd_sum(t);
      if (thread_index_in_simdgroup == 0) partial[0] = t;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    float inv = metal::rsqrt(partial[0] / N + 1e-6f);
    for (int i = tid; i < N; i += TG) out[row * N + i] = T(float(x[row * N + i]) * inv * float(w[i]));
""")


def test_rms_norm_simd(rng):
    R, N, TG = 4, 1000, 128
    x = m2v.to_bfloat16(rng.standard_normal((R, N)))
    w = m2v.to_bfloat16(1 + 0.1 * rng.standard_normal(N))
    (out,) = run_simd(RMS_SIMD, inputs=[x, w], template=[("T", "bfloat16"), ("N", N), ("TG", TG)],
                      grid=(R * TG, 1, 1), threadgroup=(TG, 1, 1), output_shapes=[(R, N)],
                      output_dtypes=["bfloat16"])
    xf, wf = m2v.from_bfloat16(x).astype(np.float64), m2v.from_bfloat16(w).astype(np.float64)
    ref = xf / np.sqrt((xf ** 2).mean(-1, keepdims=True) + 1e-6) * wf
    assert_close(m2v.from_bfloat16(out), ref, 2e-2, 2e-2)


# 17. GELU (tanh approximation) over a strided 3-D float16 view, elem_to_loc on uint3 positions.
GELU = m2v.metal_kernel(name="gelu_tanh_strided", input_names=["x"], output_names=["out"],
                        ensure_row_contiguous=False, source="""
    uint3 pos = thread_position_in_grid;
    uint3 n = threads_per_grid;
    auto loc = elem_to_loc(pos, x_shape, x_strides, x_ndim);
    float v = float(x[loc]);
    float g = 0.5f * v * (1.0f + metal::precise::tanh(0.7978845608f * (v + 0.044715f * v * v * v)));
    out[(pos.z * n.y + pos.y) * n.x + pos.x] = half(g);
""")


def test_gelu_strided_3d(rng):
    base = rng.standard_normal((6, 5, 20)).astype(np.float16)
    x = base.transpose(1, 0, 2)[:, :, ::2]  # shape (5, 6, 10)
    (out,) = GELU(inputs=[x], grid=(10, 6, 5), threadgroup=(8, 2, 2), output_shapes=[x.shape],
                  output_dtypes=[np.float16])
    xf = x.astype(np.float64)
    ref = 0.5 * xf * (1 + np.tanh(0.7978845608 * (xf + 0.044715 * xf ** 3)))
    assert_close(out, ref, 2e-3, 2e-3)


# 18. Token embedding gather with int64 ids from a bfloat16 table, scaled (Gemma-style).
EMBED = m2v.metal_kernel(name="embed_gather", input_names=["ids", "table", "scale"], output_names=["out"],
                         source="""
    uint d = thread_position_in_grid.x;
    uint t = thread_position_in_grid.y;
    int64_t row = ids[t];
    out[t * D + d] = bfloat16_t(float(table[row * D + d]) * scale);
""")


def test_embedding_gather_int64_ids(rng):
    V, D, T = 50, 16, 9
    table = m2v.to_bfloat16(rng.standard_normal((V, D)))
    ids = rng.integers(0, V, T).astype(np.int64)
    (out,) = EMBED(inputs=[ids, table, 2.0], template=[("D", D)], grid=(D, T, 1), threadgroup=(16, 1, 1),
                   output_shapes=[(T, D)], output_dtypes=["bfloat16"])
    ref = m2v.from_bfloat16(table)[ids] * 2
    np.testing.assert_array_equal(m2v.from_bfloat16(out), ref)


# 19. Complex rotation of a signal (audio-style STFT phase shift) with complex64_t from the prelude.
COMPLEX_ROT = m2v.metal_kernel(name="complex_phase_shift", input_names=["z", "phase"], output_names=["out"],
                               source="""
    uint i = thread_position_in_grid.x;
    complex64_t w = complex64_t(metal::cos(phase[i]), metal::sin(phase[i]));
    out[i] = z[i] * w;
""")


def test_complex64_phase_shift(rng):
    n = 64
    z = (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(np.complex64)
    phase = rng.uniform(-np.pi, np.pi, n).astype(np.float32)
    (out,) = COMPLEX_ROT(inputs=[z, phase], grid=(n, 1, 1), threadgroup=(32, 1, 1), output_shapes=[(n,)],
                         output_dtypes=[np.complex64])
    assert_close(out.real, (z * np.exp(1j * phase)).real, 1e-5, 1e-5)
    assert_close(out.imag, (z * np.exp(1j * phase)).imag, 1e-5, 1e-5)


# 20. Limits<T> and ceildiv from the prelude: per-block min over padded tiles.
BLOCK_MIN = m2v.metal_kernel(name="block_min", input_names=["x", "n"], output_names=["out"], source="""
    uint b = thread_position_in_grid.x;
    int blocks = ceildiv(n, BLOCK);
    if (int(b) >= blocks) return;
    T m = Limits<T>::max;
    for (int i = b * BLOCK; i < metal::min(n, int(b + 1) * BLOCK); ++i) m = metal::min(m, x[i]);
    out[b] = m;
""")


@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_block_min_limits_ceildiv(rng, dtype):
    n, block = 103, 16
    x = (rng.standard_normal(n) * 100).astype(dtype)
    blocks = -(-n // block)
    (out,) = BLOCK_MIN(inputs=[x, n], template=[("T", dtype), ("BLOCK", block)], grid=(blocks + 3, 1, 1),
                       threadgroup=(4, 1, 1), output_shapes=[(blocks,)], output_dtypes=[dtype])
    ref = [x[i * block:(i + 1) * block].min() for i in range(blocks)]
    np.testing.assert_array_equal(out, np.array(ref, dtype))
