"""Scaled dot product attention, launched as mlx/backend/metal/scaled_dot_product_attention.cpp launches it:

- decode (query length <= 8): `sdpa_vector_{T}_{Dqk}_{Dv}` (scaled_dot_product_attention.metal, sdpa_vector.h), one
  threadgroup of 1024 threads (32 simdgroups) per (batch*head, query row); function constants 20-25 (has_mask,
  query_transposed, do_causal, bool_mask, float_mask, has_sinks); the mask bound at 11 (bool) or 12 (float), its
  strides at 13-15; sinks at 16 with the query head count at 17.
- long keys: `sdpa_vector_2pass_1[_gqa]_{T}_{Dqk}_{Dv}` (partials in T, sums and maxs in float32, `blocks` as
  function constant 26 and grid z) then `sdpa_vector_2pass_2_{T}_{Dv}` (blocks as setBytes 4) on the same stream.
  The block count and the 1-pass/2-pass routing depend on the last letter of MLX's device architecture name
  ('s', 'd' or other): each case names the letter it mirrors.
- prefill (query length > 8): steel attention (kernels/steel/attn/kernels/steel_attention.metal) with AttnParams at
  4, AttnMaskParams at 5 and the mask at 6, sinks at 7; function constants 200/201 (align_Q/align_K), 300-302
  (has_mask, do_causal, has_sinks); grid (NQ, H, B) of (32, 4, 1). The output is allocated (B, L, H, D) in memory
  and seen as (B, H, L, D) through its strides, as MLX does.

Reference: softmax(scale * Q K^T + mask) V in float64 per (batch, head), key/value head = head // (H / H_kv);
causal keeps key j for query i when j <= i + kL - qL; sinks add exp(sink[h]) to each row's denominator."""
import struct

import numpy as np

from mlxhost import ceildiv, row_strides, strided_view
from mlxrun import Case, DTYPES, Mismatch, f32, i32, itemsize, pack, tname

FILE_VEC = "scaled_dot_product_attention.metal"
FILE_STEEL = "steel/attn/kernels/steel_attention.metal"

# MLX's get_type_string: the names the sdpa_vector instantiations use
VEC_TNAME = {"f32": "float", "f16": "float16_t", "bf16": "bfloat16_t"}


# --------------------------------------------------------------------------------------------------- arrays
class Arr:
    """A device array as MLX's host code sees it: buffer, byte offset, logical shape, strides (elements), and the
    float64 values it holds seen through them."""

    def __init__(self, buf, offset, shape, strides, values, dt):
        self.buf, self.offset, self.shape, self.strides, self.values, self.dt = buf, offset, list(shape), list(
            strides), values, dt

    @property
    def bind(self):
        return (self.buf, self.offset * itemsize(self.dt))

    def row_contiguous(self):
        """MLX's row_contiguous flag: strides equal the row-major ones over the dims of size > 1."""
        want = row_strides(self.shape)
        return all(s == w for n, s, w in zip(self.shape, self.strides, want) if n != 1)


def make_bhld(ctx, shape, dt, lo, hi, layout="bhld", cap=None, row0=0, edit=None):
    """A (B, H, L, D) array. layout "bhld": memory (B, H, cap, D); "blhd": memory (B, cap, H, D) (the projection
    output reshaped and transposed, as models make it); "lbhd": memory (cap, B, H, D). cap >= L (a KV cache), row0: first row of the window.
    Values uniform in [lo, hi]; `edit(view)` may overwrite some of them through the logical (B, H, L, D) view before
    they are stored."""
    B, H, L, D = shape
    cap = cap or L
    if layout == "bhld":
        phys = (B, H, cap, D)
        strides = [H * cap * D, cap * D, D, 1]
        offset = row0 * D
    elif layout == "blhd":
        phys = (B, cap, H, D)
        strides = [cap * H * D, D, H * D, 1]
        offset = row0 * H * D
    else:  # "lbhd": the sequence outermost
        phys = (cap, B, H, D)
        strides = [H * D, D, B * H * D, 1]
        offset = row0 * B * H * D
    x = ctx.rng.uniform(lo, hi, size=phys)
    if edit is not None:
        flat = x.reshape(-1)
        edit(np.lib.stride_tricks.as_strided(flat[offset:], shape, [st * flat.itemsize for st in strides]))
    buf, xs = ctx.upload(x, dt)
    return Arr(buf, offset, shape, strides, strided_view(xs, shape, strides, offset), dt)


def causal_tail(q, qr, khi):
    """An edit for the keys of a causal case: key kL - qL + i (i >= 1) becomes query row i - 1 of the group's first
    head, scaled into the key range. Row i - 1 would score it far above every other key, but causality hides it
    from that row (row i - 1 sees keys up to kL - qL + i - 1), so a kernel that ignores the mask is far off."""
    def edit(kv):
        B, Hk, kL, _ = kv.shape
        g = q.shape[1] // Hk
        qL = q.shape[2]
        for i in range(1, min(qL, kL)):
            kv[:, :, kL - qL + i, :] = q.values[:, ::g, i - 1, :] * (khi / qr)
    return edit


def make_mask(ctx, target, base_shape, kind, dt):
    """A mask of `base_shape` (each dim 1 or the target's) broadcast to `target` (B, H, qL, kL) with stride 0 on the
    broadcast dims, as broadcast_to leaves it. kind "bool": random with key 0 always on (no empty row); "float":
    additive values in [-3, 1] with about a fifth -inf (key 0 never)."""
    rng = ctx.rng
    if kind == "bool":
        m = rng.random(base_shape) < 0.6
        m[..., 0] = True
        buf, vals = ctx.upload(m, "bool")
        mdt = "bool"
    else:
        m = rng.uniform(-3.0, 1.0, size=base_shape)
        m[rng.random(base_shape) < 0.2] = -np.inf
        m[..., 0] = rng.uniform(-1.0, 0.0, size=m[..., 0].shape)
        buf, vals = ctx.upload(m, dt)
        mdt = dt
    base_strides = row_strides(base_shape)
    strides = [0 if (b == 1 and t != 1) else s for b, s, t in zip(base_shape, base_strides, target)]
    return Arr(buf, 0, target, strides, np.broadcast_to(vals, target), mdt)


# --------------------------------------------------------------------------------------------------- reference
def attention_ref(q, k, v, scale, causal=False, bmask=None, fmask=None, sinks=None):
    """float64: q (B, H, qL, D), k (B, Hk, kL, D), v (B, Hk, kL, Dv)."""
    B, H, qL, _ = q.shape
    Hk, kL = k.shape[1], k.shape[2]
    g = H // Hk
    kk = np.repeat(k, g, axis=1)
    vv = np.repeat(v, g, axis=1)
    s = scale * np.einsum("bhqd,bhkd->bhqk", q, kk)
    if causal:
        i = np.arange(qL)[:, None]
        j = np.arange(kL)[None, :]
        s = np.where(j <= i + (kL - qL), s, -np.inf)
    if bmask is not None:
        s = np.where(bmask, s, -np.inf)
    if fmask is not None:
        s = s + fmask
    m = s.max(axis=-1, keepdims=True)
    if sinks is not None:
        sk = np.asarray(sinks, dtype=np.float64).reshape(1, H, 1, 1)
        m = np.maximum(m, sk)
    p = np.exp(s - m)
    den = p.sum(axis=-1, keepdims=True)
    if sinks is not None:
        den = den + np.exp(sk - m)
    return np.einsum("bhqk,bhkd->bhqd", p, vv) / den


# --------------------------------------------------------------------------------------------------- decode
def route_two_pass(arch, q_shape, k_shape):
    """ScaledDotProductAttention::eval_gpu's vector-mode choice of the 2-pass kernels."""
    return ((arch in ("d", "s")) and k_shape[2] >= 1024) or (k_shape[1] < q_shape[1] and k_shape[2] >= 4096)


def two_pass_blocks(arch, gqa, qL, N):
    """sdpa_vector_2pass's block count by device class."""
    n_simds = gqa * qL
    if arch == "s":
        blocks = 64
        if N > 1024 and n_simds > 4:
            blocks = 128 if N <= 8192 else 256 if N <= 32768 else 512 if N <= 65536 else 1024
    elif arch == "d":
        blocks = 128
        if n_simds <= 2 and N > 8192:
            blocks = 256
        elif n_simds >= 6:
            if 16384 <= N < 65536:
                blocks = 512
            elif N >= 65536:
                blocks = 1024
    else:
        blocks = 64 if n_simds >= 4 else 32
    return blocks


def kv_strides(a):
    """(head stride, seq stride) as size_t: the batch stride when there is one kv head."""
    head = a.strides[0] if a.shape[1] == 1 else a.strides[1]
    return np.uint64(head), np.uint64(a.strides[2])


def mask_vec_strides(m):
    kv = m.strides[3] if m.shape[3] > 1 else 0
    qs = m.strides[2] if m.shape[2] > 1 else 0
    hs = m.strides[1] if m.shape[1] > 1 else (m.strides[0] if m.shape[0] > 1 else 0)
    return i32(kv), i32(qs), i32(hs)


def vec_constants(mask, q, do_causal, sinks):
    has_mask = mask is not None
    bool_mask = has_mask and mask.dt == "bool"
    return {20: has_mask, 21: not q.row_contiguous(), 22: bool(do_causal), 23: bool_mask,
            24: has_mask and not bool_mask, 25: sinks is not None}


def check_vector_layouts(q, k, v, mask):
    """The layouts eval_gpu passes through uncopied in vector mode (the cases only build those)."""
    B, H = q.shape[0], q.shape[1]
    if not q.row_contiguous():
        assert B == 1 or H == 1
        bidx = 1 if B == 1 else 0
        assert q.strides[3] == 1 and q.strides[2] == q.shape[3] * q.shape[bidx] and q.strides[bidx] == q.shape[3]
    for a in (k, v):
        assert a.strides[3] == 1
        assert a.shape[0] == 1 or a.shape[1] == 1 or a.strides[0] == a.strides[1] * a.shape[1]
    if mask is not None:
        assert mask.row_contiguous() or B == 1 or H == 1 or mask.strides[0] == mask.strides[1] * mask.shape[1]


def launch_sdpa_vector(ctx, dt, q, k, v, out, scale, do_causal, mask, sinks, arch):
    """The vector-mode branch of eval_gpu: the 1-pass or 2-pass kernels. Returns the kernel names launched."""
    B, H, qL, D = q.shape
    Hk, N, Dv = k.shape[1], k.shape[2], v.shape[3]
    do_causal = do_causal and qL > 1
    consts = vec_constants(mask, q, do_causal, sinks)
    kh, ks = kv_strides(k)
    vh, vs = kv_strides(v)
    gqa = H // Hk
    names = []
    if not route_two_pass(arch, q.shape, k.shape):
        name = f"sdpa_vector_{VEC_TNAME[dt]}_{D}_{Dv}"
        args = {0: q.bind, 1: k.bind, 2: v.bind, 3: out, 4: i32(gqa), 5: i32(N), 6: kh, 7: ks, 8: vh, 9: vs,
                10: f32(scale)}
        if mask is not None:
            args[11 + (mask.dt != "bool")] = mask.bind
            args[13], args[14], args[15] = mask_vec_strides(mask)
        if sinks is not None:
            args[16] = sinks.bind
            args[17] = i32(H)
        ctx.launch(name, args, groups=(B * H, qL, 1), threadgroup=(1024, 1, 1), constants=consts)
        return [name]
    # 2-pass
    gqa_kernel = (mask is None and sinks is None and qL == 1 and H == 8 * Hk and D == Dv and D in (64, 128)
                  and N >= 8192)
    name1 = f"sdpa_vector_2pass_1{'_gqa' if gqa_kernel else ''}_{VEC_TNAME[dt]}_{D}_{Dv}"
    blocks = two_pass_blocks(arch, gqa, qL, N)
    partials = ctx.empty(B * H * qL * blocks * Dv * itemsize(dt))
    sums = ctx.empty(B * H * qL * blocks * 4)
    maxs = ctx.empty(B * H * qL * blocks * 4)
    consts[26] = int(blocks)
    args = {0: q.bind, 1: k.bind, 2: v.bind, 3: partials, 4: sums, 5: maxs, 7: i32(N), 8: kh, 9: ks, 10: vh, 11: vs,
            12: f32(scale)}
    if mask is not None:
        args[13 + (mask.dt != "bool")] = mask.bind
        args[15], args[16], args[17] = mask_vec_strides(mask)
    if sinks is not None:
        args[18] = sinks.bind
    ctx.launch(name1, args, groups=(Hk, B, blocks), threadgroup=(32, gqa, qL), constants=consts)
    name2 = f"sdpa_vector_2pass_2_{VEC_TNAME[dt]}_{Dv}"
    ctx.launch(name2, {0: partials, 1: sums, 2: maxs, 3: out, 4: i32(blocks)}, groups=(B * H, qL, 1),
               threadgroup=(1024, 1, 1))
    return [name1, name2]


def vector_kernels(dt, q_shape, k_shape, Dv, arch, masked, sinks):
    B, H, qL, D = q_shape
    Hk, N = k_shape[1], k_shape[2]
    if not route_two_pass(arch, q_shape, k_shape):
        return [f"sdpa_vector_{VEC_TNAME[dt]}_{D}_{Dv}"]
    g = not masked and not sinks and qL == 1 and H == 8 * Hk and D == Dv and D in (64, 128) and N >= 8192
    return [f"sdpa_vector_2pass_1{'_gqa' if g else ''}_{VEC_TNAME[dt]}_{D}_{Dv}", f"sdpa_vector_2pass_2_{VEC_TNAME[dt]}_{Dv}"]


def vector_case(variant, dt, B, H, Hk, qL, N, D, Dv=None, arch="g", q_layout="bhld", kv_layout="bhld", kv_cap=None,
                kv_row0=0, mask=None, mask_base=None, causal=False, sinks=False, qr=2.0, sink_range=(0.5, 3.0),
                tol=None):
    """mask: None | "bool" | "float"; mask_base: the mask's own shape before broadcasting (default: full). Queries
    are uniform in [-qr, qr]: a wider range makes the softmax peakier, so that long key ranges still give outputs
    far from their mean (a lost or doubled block shows). Sinks are uniform in sink_range: near the top scores, so
    that they change the result."""
    Dv = Dv or D
    q_shape, k_shape = (B, H, qL, D), (B, Hk, N, D)
    kernels = vector_kernels(dt, q_shape, k_shape, Dv, arch, mask is not None, sinks)

    def run(ctx):
        scale = 1.0 / np.sqrt(D)
        q = make_bhld(ctx, q_shape, dt, -qr, qr, q_layout)
        edit = causal_tail(q, qr, 2.0) if causal and qL > 1 else None
        k = make_bhld(ctx, k_shape, dt, -2, 2, kv_layout, kv_cap, kv_row0, edit)
        v = make_bhld(ctx, (B, Hk, N, Dv), dt, -1, 1, kv_layout, kv_cap, kv_row0)
        m = make_mask(ctx, (B, H, qL, N), mask_base or (B, H, qL, N), mask, dt) if mask else None
        sk = None
        if sinks:
            sbuf, svals = ctx.rand((H,), dt, *sink_range)
            sk = Arr(sbuf, 0, (H,), (1,), svals, dt)
        check_vector_layouts(q, k, v, m)
        out = ctx.empty(B * H * qL * Dv * itemsize(dt))
        names = launch_sdpa_vector(ctx, dt, q, k, v, out, scale, causal, m, sk, arch)
        assert names == kernels, (names, kernels)
        got = ctx.read(out, dt, (B, H, qL, Dv))
        want = attention_ref(q.values, k.values, v.values, scale, causal=causal and qL > 1,
                             bmask=m.values if mask == "bool" else None,
                             fmask=m.values if mask == "float" else None, sinks=sk.values if sinks else None)
        ctx.check("out", got, want, tol=tol, dt=dt)

    shape = f"b{B}h{H}k{Hk}q{qL}n{N}d{D}" + (f"v{Dv}" if Dv != D else "")
    return Case(f"attention.{variant}.{dt}.{shape}", "attention", FILE_VEC, kernels, run,
                note=f"arch '{arch}'")


# --------------------------------------------------------------------------------------------------- prefill
def attn_params(B, H, D, qL, kL, gqa, scale, NQ, NK, NQa, NKa, qrem, krem, qoff, qs, ks, vs, os_):
    """steel::AttnParams: 13 int/float fields (56 bytes, no padding) then four int64[3]."""
    return pack("6if7i12q", B, H, D, qL, kL, gqa, scale, NQ, NK, NQa, NKa, qrem, krem, qoff, *qs, *ks, *vs, *os_)


def steel_name(dt, bd, mask_dt):
    bq, bk = 32, (32 if bd < 128 else 16)
    return f"steel_attention_{tname(dt)}_bq{bq}_bk{bk}_bd{bd}_wm4_wn1_mask{tname(mask_dt or dt)}"


def launch_steel_attention(ctx, dt, q, k, v, o, scale, do_causal, mask, sinks):
    """sdpa_full_self_attention_metal (no NAX path)."""
    B, H, qL, D = q.shape
    kL = k.shape[2]
    gqa = H // k.shape[1]
    wm, wn = 4, 1
    bd = D
    bq = 32
    bk = 32 if bd < 128 else 16
    align_Q = qL % bq == 0
    align_K = kL % bk == 0
    consts = {200: align_Q, 201: align_K, 300: mask is not None, 301: bool(do_causal), 302: sinks is not None}
    name = steel_name(dt, bd, mask.dt if mask is not None else None)
    NQ, NK = ceildiv(qL, bq), ceildiv(kL, bk)
    NQa, NKa = qL // bq, kL // bk
    params = attn_params(B, H, D, qL, kL, gqa, scale, NQ, NK, NQa, NKa, qL - NQa * bq, kL - NKa * bk, kL - qL,
                         q.strides[:3], k.strides[:3], v.strides[:3], o.strides[:3])
    assert len(params) == 152
    args = {0: q.bind, 1: k.bind, 2: v.bind, 3: o.bind, 4: params}
    if mask is not None:
        args[5] = pack("3q", *mask.strides[:3])
        args[6] = mask.bind
    if sinks is not None:
        args[7] = sinks.bind
    ctx.launch(name, args, groups=(NQ, H, B), threadgroup=(32, wm, wn), constants=consts)
    return name


def steel_case(variant, dt, B, H, Hk, qL, kL, D, q_layout="bhld", kv_layout="bhld", kv_cap=None, kv_row0=0,
               mask=None, mask_base=None, causal=False, sinks=False, tol=None):
    kernel = steel_name(dt, D, ("bool" if mask == "bool" else dt) if mask else None)

    def run(ctx):
        scale = 1.0 / np.sqrt(D)
        q = make_bhld(ctx, (B, H, qL, D), dt, -2, 2, q_layout)
        edit = causal_tail(q, 2.0, 2.0) if causal else None
        k = make_bhld(ctx, (B, Hk, kL, D), dt, -2, 2, kv_layout, kv_cap, kv_row0, edit)
        v = make_bhld(ctx, (B, Hk, kL, D), dt, -1, 1, kv_layout, kv_cap, kv_row0)
        m = make_mask(ctx, (B, H, qL, kL), mask_base or (B, H, qL, kL), mask, dt) if mask else None
        sk = None
        if sinks:
            sbuf, svals = ctx.rand((H,), dt, 0.5, 3)
            sk = Arr(sbuf, 0, (H,), (1,), svals, dt)
        for a in (q, k, v) + ((m,) if m is not None else ()):
            assert a.strides[3] == 1  # is_matrix_contiguous: no copy
        # The output: (B, qL, H, D) in memory, strides {qL*H*D, D, H*D, 1} for (B, H, qL, D)
        obuf = ctx.empty(B * qL * H * D * itemsize(dt))
        o = Arr(obuf, 0, (B, H, qL, D), (qL * H * D, D, H * D, 1), None, dt)
        name = launch_steel_attention(ctx, dt, q, k, v, o, scale, causal, m, sk)
        assert name == kernel
        got = ctx.read(obuf, dt, (B, qL, H, D)).transpose(0, 2, 1, 3)
        want = attention_ref(q.values, k.values, v.values, scale, causal=causal,
                             bmask=m.values if mask == "bool" else None,
                             fmask=m.values if mask == "float" else None, sinks=sk.values if sinks else None)
        ctx.check("out", got, want, tol=tol, dt=dt)

    shape = f"b{B}h{H}k{Hk}q{qL}n{kL}d{D}"
    return Case(f"attention.{variant}.{dt}.{shape}", "attention", FILE_STEEL, [kernel], run)


# --------------------------------------------------------------------------------------------------- cases
def cases():
    # --- sdpa_vector (1 pass): arch 'g' routes to 2 passes only for GQA with >= 4096 keys
    yield vector_case("vector", "f32", 2, 4, 4, 1, 100, 64)                          # 100 keys: not a multiple of 32
    yield vector_case("vector.gqa", "f16", 1, 32, 8, 1, 256, 128)                    # multiple of 32
    yield vector_case("vector.gqa", "bf16", 2, 8, 2, 1, 333, 128)
    yield vector_case("vector.boolmask", "f32", 2, 4, 2, 1, 77, 64, mask="bool")
    yield vector_case("vector.floatmask.bcast", "f16", 1, 8, 2, 3, 90, 64, mask="float", mask_base=(1, 1, 3, 90))
    yield vector_case("vector.boolmask.qlen", "bf16", 2, 4, 4, 5, 61, 128, mask="bool")
    yield vector_case("vector.causal.qtransposed", "bf16", 1, 8, 2, 4, 50, 128, q_layout="blhd", causal=True)
    yield vector_case("vector.causal", "f32", 2, 2, 1, 8, 45, 64, causal=True)        # gqa 2 x 8 queries = 16 simds
    yield vector_case("vector.sinks", "f32", 2, 4, 2, 1, 90, 64, sinks=True)
    yield vector_case("vector.kvcache", "f16", 2, 4, 2, 1, 70, 128, kv_cap=128, kv_row0=9)
    yield vector_case("vector.kvtransposed", "f32", 1, 6, 3, 2, 129, 64, kv_layout="blhd")
    yield vector_case("vector.qtransposed.batch", "f16", 3, 1, 1, 4, 40, 64, q_layout="lbhd")  # H == 1: batch-major
    yield vector_case("vector.d192v128", "f16", 1, 4, 4, 1, 64, 192, Dv=128)
    # --- 2 passes
    yield vector_case("vector2pass.gqa", "f32", 1, 8, 2, 1, 4100, 128, arch="g", qr=6)  # gqa 4: 64 blocks
    yield vector_case("vector2pass.boolmask", "f16", 1, 4, 4, 1, 1500, 64, arch="d", mask="bool", qr=6)  # 128 blocks
    yield vector_case("vector2pass.causal", "bf16", 1, 16, 2, 2, 2000, 128, arch="s", causal=True, qr=6)  # 128 blocks
    yield vector_case("vector2pass.floatmask.sinks", "f32", 1, 4, 2, 3, 16390, 64, arch="d", mask="float",
                      sinks=True, qr=6, sink_range=(12, 16))  # 6 simds: 512 blocks
    yield vector_case("vector2pass.kvcache", "bf16", 2, 4, 2, 1, 1100, 64, arch="s", kv_cap=1200, kv_row0=33, qr=6)
    # the duplication-free GQA first pass: 1 query, gqa 8, >= 8192 keys, no mask or sinks
    yield vector_case("vector2pass.gqa8", "f16", 1, 16, 2, 1, 8229, 128, arch="g", qr=6)  # 64 blocks, HPT 4
    yield vector_case("vector2pass.gqa8", "bf16", 1, 8, 1, 1, 9000, 64, arch="s", qr=6)   # 256 blocks, HPT 8
    # --- steel attention (prefill): bq 32, bk 32 (D 64) or 16 (D 128)
    yield steel_case("steel", "f32", 2, 4, 4, 64, 64, 64)                           # aligned Q and K
    yield steel_case("steel.causal", "f16", 1, 4, 2, 100, 100, 128, causal=True)    # partial Q (4) and K (4) tiles
    yield steel_case("steel.causal.offset", "bf16", 2, 2, 1, 40, 77, 64, causal=True)  # qL_off 37
    yield steel_case("steel.boolmask.qtransposed", "f16", 1, 4, 4, 50, 70, 64, q_layout="blhd", mask="bool")
    yield steel_case("steel.floatmask.bcast", "bf16", 2, 4, 2, 33, 48, 128, mask="float", mask_base=(1, 1, 33, 48))
    yield steel_case("steel.floatmask", "f32", 1, 2, 2, 96, 130, 128, mask="float")  # aligned Q, partial K
    yield steel_case("steel.sinks.kvcache", "f32", 2, 4, 2, 20, 90, 64, kv_cap=128, kv_row0=7, sinks=True)
    yield steel_case("steel.causal.sinks", "bf16", 1, 4, 1, 24, 24, 128, causal=True, sinks=True)
    yield steel_case("steel.kvtransposed", "f16", 1, 8, 2, 64, 160, 128, q_layout="blhd", kv_layout="blhd")
