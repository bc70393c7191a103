"""MLX's NAX kernels (Metal 4 tensors: MetalPerformancePrimitives' matmul2d on cooperative tensors), launched as
MLX's host code launches them when metal::is_nax_available() is true (generation >= 17, 18 for the 'p' class; macOS
26.2 assumed). Three families:

- steel_gemm_nax: mlx/backend/metal/matmul.cpp's steel_matmul_axpby with use_nax (every float type: MLX_ENABLE_TF32
  is on by default, so float32 takes NAX too). Split-k first when one batch and K >= 3 max(M, N), or max(M, N) <=
  1024 and K > 2 max(M, N): steel_gemm_splitk_nax (64x64x256 2x2, or 128x128x512 4x4 when (M + N) / 2 >= 512 and
  K > 4096; K cut in partitions of K / 2 (K <= 1024), 1024, 2048 or 4096; function constants align_M/N (200, 201);
  a 1-D grid of partitions x swizzled tiles, swizzle_log 1 past 3 tile rows) into float32 partials, then
  steel_gemm_splitk.metal's accumulation pass (get_block_dims threadgroups). Otherwise steel_gemm_fused_nax
  (steel_matmul_regular_axpby_nax): on a 'd' (like 's' and 'c') device 64x128 tiles, 2x4 simdgroups, bk 64 when
  K >= 8192 and K > M + N else 256, swizzle_log 2; other devices 128x128x512, 4x4, swizzle_log 1 past 3 tile rows.
  Function constants, GEMMParams / GEMMAddMMParams, batch vectors and the batch collapse as cases/steel_gemm.py.
  Also GatherMM's sorted-right-indices route (gather_mm_rhs_nax: bm 16/32/64 by rows per expert, 128x128 with
  bk 128) and SegmentedMM (segmented_mm_nax: 64x64, bk 256/128/64 by the average segment).
- attention_nax: scaled_dot_product_attention.cpp's sdpa_full_self_attention_nax for prefill (query length > 8)
  with head dim 64, 96 or 128 (bq 64, bk 32, 4x1 simdgroups), and the head-dim split kernel for 256
  (steel_attention_dsplit_*, 4x2 simdgroups), which use_fallback only picks for causal attention without an array
  mask and >= 1024 queries; there a key length that is not a multiple of 32 is widened to the next one when the keys
  and values sit in a cache with rows behind them (has_backing_rows), the causal offset staying the true one.
  AttnParams, AttnMaskParams, function constants 200/201/300-302, grid (NQ, H, B) of (32, wm, wn), the output
  (B, L, H, D) in memory, as cases/attention.py.
- quantized_nax: quantized.cpp's qmm_nax (transposed w, K % 64 == 0: a non-batched product gets there when
  qmm_splitk finds no split > 1), gather_qmm_nax and gather_qmm_rhs_nax (cases/quantized.py's plan with a NAX
  device: affine 2-8 bits and group sizes 32/64/128, mxfp4, nvfp4, mxfp8).

The device: generation 17, class 'd' ("g17d", the large-device branches, as the other families' M3 Ultra), unless a
case names "g17g" (a base-class generation-17 GPU: the fused gemm's 128x128x512 tiles). Every NAX kernel needs
32-wide simdgroups: lavapipe refuses them (stage `refused`); they run on a GPU.
References: numpy float64 (matmul of the inputs as stored; softmax attention; x @ dequantize(w))."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import attention as at  # noqa: E402
import quantized as qz  # noqa: E402
import steel_gemm as sg  # noqa: E402
from mlxhost import block_dims, ceildiv  # noqa: E402
from mlxrun import Case, f32, i32, itemsize, tname  # noqa: E402

FILE_FUSED_NAX = "steel/gemm/kernels/steel_gemm_fused_nax.metal"
FILE_SPLITK_NAX = "steel/gemm/kernels/steel_gemm_splitk_nax.metal"
FILE_ATTN_NAX = "steel/attn/kernels/steel_attention_nax.metal"
D17 = "d"  # applegpu_g17d: the device class letter (d.get_architecture().back())
G17 = "g"  # applegpu_g17g
DEV_LABEL = {D17: "", G17: ".g17g"}
QDEV = qz.Dev(17, "d", "g17d")  # the quantized family's device model, with NAX


# ------------------------------------------------------------------------------------------------ gemm: host
def fused_nax_tile(devc, M, N, K):
    """steel_matmul_regular_axpby_nax: (bm, bn, bk, wm, wn)."""
    if devc in ("s", "c", "d"):
        return 64, 128, (64 if (K >= 8192 and K > M + N) else 256), 2, 4
    return 128, 128, 512, 4, 4


def fused_nax_swizzle_log(devc, M, tile):
    """steel_matmul_regular_axpby_nax's swizzle_log."""
    return 2 if devc in ("s", "c", "d") else (0 if ceildiv(M, tile[0]) <= 3 else 1)


def fused_nax_name(ta, tb, dt, tile):
    bm, bn, bk, wm, wn = tile
    return (f"steel_gemm_fused_nax_{'t' if ta else 'n'}{'t' if tb else 'n'}_{tname(dt)}_{tname(dt)}"
            f"_bm{bm}_bn{bn}_bk{bk}_wm{wm}_wn{wn}")


def use_splitk_nax(M, N, K, batch_size_out):
    """steel_matmul_axpby's case 2 (case 1, the simdgroup split-k, is for devices without NAX)."""
    return batch_size_out == 1 and (K >= 3 * max(M, N) or (max(M, N) <= 1024 and K > 2 * max(M, N)))


def splitk_nax_plan(M, N, K):
    """steel_gemm_splitk_axpby_nax: (tile, partition size, partitions)."""
    tile = (128, 128, 512, 4, 4)
    part = 4096
    if (M + N) // 2 < 512 or K <= 4096:
        tile = (64, 64, 256, 2, 2)
    if K <= 1024:
        part = K // 2
    elif K <= 2048:
        part = 1024
    elif K <= 4096:
        part = 2048
    return tile, part, ceildiv(K, part)


def splitk_nax_name(ta, tb, dt, tile):
    bm, bn, bk, wm, wn = tile
    return (f"steel_gemm_splitk_nax_{'t' if ta else 'n'}{'t' if tb else 'n'}_{tname(dt)}_float32"
            f"_bm{bm}_bn{bn}_bk{bk}_wm{wm}_wn{wn}")


def accum_name(dt, do_axpby):
    return f"{sg.FILE_SPLITK}:steel_gemm_splitk_accum_{tname(dt)}_float32" + ("_axbpy" if do_axpby else "")


def launch_fused_nax(ctx, devc, dt, a, b, c, out, M, N, K, batch_size_out, lda, ldb, ta, tb, batch_shape,
                     batch_strides, bsa, bsb, bsc, alpha, beta, check_ab, c_ld):
    tile = fused_nax_tile(devc, M, N, K)
    return [sg.launch_fused(ctx, fused_nax_name(ta, tb, dt, tile), tile, fused_nax_swizzle_log(devc, M, tile), a, b,
                            c, out, M, N, K, batch_size_out, lda, ldb, batch_shape, batch_strides, bsa, bsb, bsc,
                            alpha, beta, check_ab, c_ld)]


def launch_splitk_nax(ctx, dt, a, b, c, out, M, N, K, lda, ldb, ta, tb, alpha, beta, check_ab, c_ld):
    tile, part, parts = splitk_nax_plan(M, N, K)
    bm, bn, bk, wm, wn = tile
    name = splitk_nax_name(ta, tb, dt, tile)
    c_split = ctx.empty(parts * M * N * 4)  # float32 partials (split_k_partitions, M, N)
    tn, tm = ceildiv(N, bn), ceildiv(M, bm)
    swizzle_log = 0 if tm <= 3 else 1
    tile_sz = 1 << swizzle_log
    params = sg.splitk_params(M, N, K, lda, ldb, N, tn, tm, parts, M * N, part, swizzle_log, part // bk)
    ctx.launch(name, {0: a, 1: b, 2: c_split, 3: params},
               groups=(tn * tile_sz * ceildiv(tm, tile_sz) * parts, 1, 1), threadgroup=(32, wn, wm),
               constants={200: M % bm == 0, 201: N % bn == 0})
    do_axpby = check_ab and (alpha != 1.0 or beta != 0.0)
    accum = accum_name(dt, do_axpby)
    args = {0: c_split, 1: out, 2: i32(parts), 3: i32(M * N), 4: i32(N)}
    if do_axpby:
        ldc, fdc = c_ld
        args.update({5: c, 6: i32(ldc), 7: i32(fdc), 8: f32(alpha), 9: f32(beta)})
    ctx.launch(accum, args, grid=(N, M, 1), threadgroup=block_dims(N, M, 1))
    return [name, accum]


def nax_axpby(devc):
    """steel_matmul_axpby with use_nax, after the caller collapsed the batches (cases/steel_gemm.py's signature)."""

    def axpby(ctx, dt, a, b, c, out, M, N, K, batch_size_out, lda, ldb, ta, tb, batch_shape, a_bs, b_bs, c_bs, alpha,
              beta, check_ab, c_ld):
        if use_splitk_nax(M, N, K, batch_size_out):
            return launch_splitk_nax(ctx, dt, a.buf, b.buf, c.buf if c else None, out, M, N, K, lda, ldb, ta, tb,
                                     alpha, beta, check_ab, c_ld)
        strides = list(a_bs) + list(b_bs) + (list(c_bs) if check_ab and c_bs else [])
        return launch_fused_nax(ctx, devc, dt, a.buf, b.buf, c.buf if c else None, out, M, N, K, batch_size_out,
                                lda, ldb, ta, tb, batch_shape, strides, a_bs[-1] if a_bs else 0,
                                b_bs[-1] if b_bs else 0, c_bs[-1] if c_bs else 0, alpha, beta, check_ab, c_ld)

    return axpby


def nax_kernels(devc, dt, ta, tb, M, N, K, batch_size_out, do_axpby=False, collapse_m=1):
    """The entry points a case launches (for Case.kernels); the run asserts it launched these."""
    M *= collapse_m
    if collapse_m > 1:
        batch_size_out = 1
    if use_splitk_nax(M, N, K, batch_size_out):
        return [splitk_nax_name(ta, tb, dt, splitk_nax_plan(M, N, K)[0]), accum_name(dt, do_axpby)]
    return [fused_nax_name(ta, tb, dt, fused_nax_tile(devc, M, N, K))]


def gemm_file(names):
    return FILE_SPLITK_NAX if "splitk_nax" in names[0] else FILE_FUSED_NAX


# ------------------------------------------------------------------------------------------------ gemm: cases
def gemm_case(variant, dt, bshape, M, N, K, ta=False, tb=False, a_bcast=None, b_bcast=None, devc=D17):
    """Matmul (cases/steel_gemm.py's matmul_case on the NAX route)."""
    collapse = 1
    if (a_bcast is None or not any(a_bcast)) and b_bcast and all(b_bcast) and len(bshape) == 1 and not ta:
        collapse = bshape[0]
    bso = int(np.prod(bshape)) if bshape else 1
    names = nax_kernels(devc, dt, ta, tb, M, N, K, bso, collapse_m=collapse)
    tr = ("t" if ta else "n") + ("t" if tb else "n")

    def run(ctx):
        a = sg.Operand(ctx, dt, bshape, M, K, ta, a_bcast)
        b = sg.Operand(ctx, dt, bshape, K, N, tb, b_bcast)
        out_shape = list(bshape) + [M, N]
        out = ctx.empty(int(np.prod(out_shape)) * itemsize(dt))
        launched = sg.matmul(ctx, dt, a, b, out_shape, out, axpby=nax_axpby(devc))
        assert launched == names, (launched, names)
        got = ctx.read(out, dt, out_shape)
        ctx.check("out", got, np.matmul(a.values, b.values), tol=sg.gemm_tol(dt, K), dt=dt)

    return Case(f"steel_gemm_nax.{variant}_{tr}{DEV_LABEL[devc]}.{dt}.{sg.shape_str(*bshape, M, N, K)}",
                "steel_gemm_nax", gemm_file(names), names, run)


def addmm_case(variant, dt, bshape, M, N, K, alpha, beta, ta=False, tb=False, c_kind="full", b_bcast=None,
               devc=D17):
    """AddMM (cases/steel_gemm.py's addmm_case on the NAX route). c_kind: full, row (N,) or col (M, 1)."""
    bso = int(np.prod(bshape)) if bshape else 1
    assert alpha != 0.0 or beta != 1.0  # use_out_source
    names = nax_kernels(devc, dt, ta, tb, M, N, K, bso, do_axpby=(alpha != 1.0 or beta != 0.0))
    tr = ("t" if ta else "n") + ("t" if tb else "n")

    def run(ctx):
        a = sg.Operand(ctx, dt, bshape, M, K, ta)
        b = sg.Operand(ctx, dt, bshape, K, N, tb, b_bcast)
        out_shape = list(bshape) + [M, N]
        if c_kind == "full":
            c = sg.Operand(ctx, dt, bshape, M, N)
        else:  # a bias row (ldc 0) or column (fdc 0) broadcast to the output shape
            vec_len = N if c_kind == "row" else M
            c = sg.Operand(ctx, dt, [], 1, vec_len)
            c.values = np.broadcast_to(c.values.reshape((1, N) if c_kind == "row" else (M, 1)), out_shape)
            c.shape = out_shape
            c.strides = [0] * len(bshape) + ([0, 1] if c_kind == "row" else [1, 0])
        out = ctx.empty(int(np.prod(out_shape)) * itemsize(dt))
        launched = sg.addmm(ctx, dt, a, b, c, out_shape, out, alpha, beta, axpby=nax_axpby(devc))
        assert launched == names, (launched, names)
        got = ctx.read(out, dt, out_shape)
        want = alpha * np.matmul(a.values, b.values) + beta * c.values
        ctx.check("out", got, want, tol=sg.gemm_tol(dt, K), dt=dt)

    return Case(f"steel_gemm_nax.{variant}_{tr}{DEV_LABEL[devc]}.{dt}.{sg.shape_str(*bshape, M, N, K)}",
                "steel_gemm_nax", gemm_file(names), names, run)


# ------------------------------------------------------------------------------------------------ gather, segmented
FILE_GATHER_NAX = "steel/gemm/kernels/steel_gemm_gather_nax.metal"
FILE_SEGMENTED_NAX = "steel/gemm/kernels/steel_gemm_segmented_nax.metal"


def gather_rhs_nax_tile(M, E):
    """gather_mm_rhs_nax: (bm, bn, bk, wm, wn) by rows per expert."""
    if M // E > 48:
        return 64, 128, 128, 2, 4
    if M // E > 24:
        return 32, 128, 128, 1, 4
    return 16, 128, 128, 1, 4


def gather_rhs_nax_case(dt, T, N, K, n_b, tb=False):
    """GatherMM with M == 1 and sorted right indices (lhs implied): gather_mm_rhs_nax, the rows of A (T, 1, K) each
    against B[rhs[t]]; GEMMParams with B's expert stride, function constants align_M/N/K (200-202)."""
    tile = gather_rhs_nax_tile(T, n_b)
    bm, bn, bk, wm, wn = tile
    name = f"steel_gather_mm_rhs_nax_n{'t' if tb else 'n'}_{tname(dt)}_{tname(dt)}_bm{bm}_bn{bn}_bk{bk}_wm{wm}_wn{wn}"

    def run(ctx):
        a = sg.Operand(ctx, dt, [T], 1, K)
        b = sg.Operand(ctx, dt, [n_b], K, N, tb)
        rhs = np.sort(ctx.rng.integers(0, n_b, size=T)).astype(np.uint32)
        out = ctx.empty(T * N * itemsize(dt))
        # ensure_batch_contiguous(b)
        stx, sty = b.strides[-2], b.strides[-1]
        if sty == 1 and (N != 1 or stx == N):
            tb_, ldb = False, stx
        else:
            assert stx == 1
            tb_, ldb = True, sty
        assert tb_ == tb
        M = T  # a.size() / K
        consts = {200: M % bm == 0, 201: N % bn == 0, 202: K % bk == 0}
        tn, tm = ceildiv(N, bn), ceildiv(M, bm)
        params = sg.gemm_params(M, N, K, K, ldb, N, tn, tm, 0, b.strides[-3], 0, 0, K // bk, 0)
        ctx.launch(name, {0: a.buf, 1: b.buf, 2: ctx.buffer(rhs), 3: out, 4: params}, groups=(tn, tm, 1),
                   threadgroup=(32, wn, wm), constants=consts)
        got = ctx.read(out, dt, (T, 1, N))
        want = np.matmul(a.values, b.values[rhs.astype(np.int64)])
        ctx.check("out", got, want, tol=sg.gemm_tol(dt, K), dt=dt)

    return Case(f"steel_gemm_nax.gather_rhs_n{'t' if tb else 'n'}.{dt}.{sg.shape_str(T, N, K)}_e{n_b}",
                "steel_gemm_nax", FILE_GATHER_NAX, [name], run)


def segmented_case(dt, M, N, K, bounds, ta=False, tb=False, contiguous=True):
    """SegmentedMM: out[s] = A[:, k0:k1] @ B[k0:k1, :] for each segment (k0, k1). bounds: the segments' edges;
    contiguous: an (S, 2) array of pairs, else the edges seen as (S, 2) through strides (1, 1) (segments_contiguous
    false: the kernel reads segments[s], segments[s + 1]). The NAX kernel's tile is 64x64, bk by the average segment
    (256, 128, 64; bk 64 puts the segment on the grid's x); align_M/N come from GEMM_TPARAM_MACRO's tile, picked
    before the NAX override (these shapes agree under both)."""
    S = len(bounds) - 1
    mb, nb = sg.gemm_tparams(sg.DEVC, dt, ta, tb, M, N, K, S)[:2]
    assert (M % mb == 0) == (M % 64 == 0) and (N % nb == 0) == (N % 64 == 0)
    avg = K // S
    bk = 256 if avg >= 256 else 128 if avg >= 128 else 64
    name = (f"steel_segmented_mm_nax_{'t' if ta else 'n'}{'t' if tb else 'n'}_{tname(dt)}_{tname(dt)}"
            f"_bm64_bn64_bk{bk}_wm2_wn2")
    tr = ("t" if ta else "n") + ("t" if tb else "n")

    def run(ctx):
        a = sg.Operand(ctx, dt, [], M, K, ta)
        b = sg.Operand(ctx, dt, [], K, N, tb)
        ta_, lda = sg.check_transpose(a.shape, a.strides, False)
        tb_, ldb = sg.check_transpose(b.shape, b.strides, False)
        assert (ta_, tb_) == (ta, tb)
        edges = np.asarray(bounds, dtype=np.uint32)
        segs = ctx.buffer(np.stack([edges[:-1], edges[1:]], axis=1) if contiguous else edges)
        out = ctx.empty(S * M * N * itemsize(dt))
        consts = {199: contiguous, 200: M % mb == 0, 201: N % nb == 0}
        tn, tm = ceildiv(N, 64), ceildiv(M, 64)
        params = sg.gemm_params(M, N, K, lda, ldb, N, tn, tm, 0, 0, M * N, 0, 0, 0)
        ctx.launch(name, {0: a.buf, 1: b.buf, 2: segs, 3: out, 4: params},
                   groups=(S, tn, tm) if bk == 64 else (tn, tm, S), threadgroup=(32, 2, 2), constants=consts)
        got = ctx.read(out, dt, (S, M, N))
        want = np.stack([np.matmul(a.values[:, k0:k1], b.values[k0:k1, :]) for k0, k1 in zip(bounds[:-1], bounds[1:])])
        ctx.check("out", got, want, tol=sg.gemm_tol(dt, K), dt=dt)

    return Case(f"steel_gemm_nax.segmented_{tr}{'' if contiguous else '_edges'}.{dt}.{sg.shape_str(S, M, N, K)}",
                "steel_gemm_nax", FILE_SEGMENTED_NAX, [name], run)


# ------------------------------------------------------------------------------------------------ attention
def attn_nax_name(dt, D, mask_dt):
    split_d = D == 256
    return (f"steel_attention_{'dsplit_' if split_d else ''}{tname(dt)}_bq64_bk32_bd{D}_wm4_wn{2 if split_d else 1}"
            f"_mask{tname(mask_dt or dt)}")


def has_backing_rows(a, rows, buffer_elems):
    """sdpa_full_self_attention_nax's has_backing_rows: the view's rows 0..rows-1 stay inside each head's row pitch
    (the cache it was sliced from) and inside the buffer. Strides and offset in elements."""
    st = a.strides
    if st[0] < 0 or st[1] <= 0 or st[2] <= 0 or st[1] % st[2] != 0:
        return False
    pitch = st[1] // st[2]
    row0 = (a.offset % st[1]) // st[2]
    if row0 + rows > pitch:
        return False
    end = (a.shape[0] - 1) * st[0] + (a.shape[1] - 1) * st[1] + (rows - 1) * st[2] + a.shape[3]
    return a.offset + end <= buffer_elems


def launch_attention_nax(ctx, dt, q, k, v, o, scale, do_causal, mask, sinks, kv_buffer_elems):
    """sdpa_full_self_attention_nax. Returns the kernel name."""
    B, H, qL, D = q.shape
    kL = k.shape[2]
    bq, bk, wm = 64, 32, 4
    split_d = D == 256
    wn = 2 if split_d else 1
    qL_off = kL - qL  # the true diagonal, even when kL is widened below
    if split_d and do_causal and mask is None and kL % bk:
        kLp = bk * ceildiv(kL, bk)
        if has_backing_rows(k, kLp, kv_buffer_elems) and has_backing_rows(v, kLp, kv_buffer_elems):
            kL = kLp
    consts = {200: qL % bq == 0, 201: kL % bk == 0, 300: mask is not None, 301: bool(do_causal),
              302: sinks is not None}
    name = attn_nax_name(dt, D, mask.dt if mask is not None else None)
    NQ, NK = ceildiv(qL, bq), ceildiv(kL, bk)
    NQa, NKa = qL // bq, kL // bk
    params = at.attn_params(B, H, D, qL, kL, H // k.shape[1], scale, NQ, NK, NQa, NKa, qL - NQa * bq, kL - NKa * bk,
                            qL_off, q.strides[:3], k.strides[:3], v.strides[:3], o.strides[:3])
    args = {0: q.bind, 1: k.bind, 2: v.bind, 3: o.bind, 4: params}
    if mask is not None:
        args[5] = at.pack("3q", *mask.strides[:3])
        args[6] = mask.bind
    if sinks is not None:
        args[7] = sinks.bind
    ctx.launch(name, args, groups=(NQ, H, B), threadgroup=(32, wm, wn), constants=consts)
    return name, kL


def attention_case(variant, dt, B, H, Hk, qL, kL, D, q_layout="bhld", kv_layout="bhld", kv_cap=None, kv_row0=0,
                   mask=None, mask_base=None, causal=False, sinks=False, widened=None, tol=None):
    """Prefill attention on the NAX route. widened: the key length the host is expected to launch with (the
    head-dim split kernel's widening over a cache's backing rows), checked."""
    assert qL > 8 and (D in (64, 96, 128) or (D == 256 and qL >= 1024 and causal and mask is None))  # use_fallback
    kernel = attn_nax_name(dt, D, ("bool" if mask == "bool" else dt) if mask else None)

    def run(ctx):
        scale = 1.0 / np.sqrt(D)
        q = at.make_bhld(ctx, (B, H, qL, D), dt, -2, 2, q_layout)
        edit = at.causal_tail(q, 2.0, 2.0) if causal else None
        k = at.make_bhld(ctx, (B, Hk, kL, D), dt, -2, 2, kv_layout, kv_cap, kv_row0, edit)
        v = at.make_bhld(ctx, (B, Hk, kL, D), dt, -1, 1, kv_layout, kv_cap, kv_row0)
        m = at.make_mask(ctx, (B, H, qL, kL), mask_base or (B, H, qL, kL), mask, dt) if mask else None
        sk = None
        if sinks:
            sbuf, svals = ctx.rand((H,), dt, 0.5, 3)
            sk = at.Arr(sbuf, 0, (H,), (1,), svals, dt)
        for a in (q, k, v) + ((m,) if m is not None else ()):
            assert a.strides[3] == 1  # is_matrix_contiguous: no copy
        obuf = ctx.empty(B * qL * H * D * itemsize(dt))  # (B, qL, H, D) in memory, seen as (B, H, qL, D)
        o = at.Arr(obuf, 0, (B, H, qL, D), (qL * H * D, D, H * D, 1), None, dt)
        name, kL_launched = launch_attention_nax(ctx, dt, q, k, v, o, scale, causal, m, sk,
                                                 B * Hk * (kv_cap or kL) * D)
        assert name == kernel and kL_launched == (widened or kL), (name, kL_launched)
        got = ctx.read(obuf, dt, (B, qL, H, D)).transpose(0, 2, 1, 3)
        want = at.attention_ref(q.values, k.values, v.values, scale, causal=causal,
                                bmask=m.values if mask == "bool" else None,
                                fmask=m.values if mask == "float" else None, sinks=sk.values if sinks else None)
        ctx.check("out", got, want, tol=tol, dt=dt)

    return Case(f"attention_nax.{variant}.{dt}.b{B}h{H}k{Hk}q{qL}n{kL}d{D}", "attention_nax", FILE_ATTN_NAX, [kernel],
                run)


# ------------------------------------------------------------------------------------------------ cases
def gemm_cases():
    # The fused kernel on a 'd' device: 64x128 tiles, bk 256; each dtype and transpose, partial tiles in M, N, K.
    yield gemm_case("gemm", "f16", [], 256, 256, 256)                         # all aligned
    yield gemm_case("gemm", "f16", [], 100, 200, 130, tb=True)                # nothing aligned
    yield gemm_case("gemm", "f16", [], 64, 200, 300, ta=True)                 # align M
    yield gemm_case("gemm", "f16", [], 77, 256, 512, ta=True, tb=True)        # align N and K
    yield gemm_case("gemm", "bf16", [], 129, 255, 257)
    yield gemm_case("gemm", "bf16", [], 192, 384, 256, tb=True)               # aligned, 3x3 tiles
    yield gemm_case("gemm", "bf16", [], 50, 70, 90, ta=True)
    yield gemm_case("gemm", "bf16", [], 300, 130, 200, ta=True, tb=True)
    yield gemm_case("gemm", "f32", [], 100, 70, 50)                           # float32: NAX with tf32 on
    yield gemm_case("gemm", "f32", [], 128, 256, 512, tb=True)                # aligned
    yield gemm_case("gemm", "f32", [], 65, 129, 100, ta=True)
    yield gemm_case("gemm", "f32", [], 96, 200, 64, ta=True, tb=True)
    yield gemm_case("gemm_large", "f16", [], 512, 512, 512)                   # 8x4 tiles: swizzle 2 folds rows
    # bk 64: K >= 8192 and K > M + N, batched (one batch would go to split-k)
    yield gemm_case("gemm_bk64", "f16", [2], 70, 100, 8200)
    # batches: plain stride (has_batch false), broadcast B folded into M, two-level broadcast (has_batch)
    yield gemm_case("gemm_batched", "f16", [3], 70, 150, 100, ta=True)
    yield gemm_case("gemm_batch_into_m", "f32", [3], 40, 130, 64, b_bcast=[True])
    yield gemm_case("gemm_has_batch", "bf16", [2, 3], 33, 140, 48, tb=True, a_bcast=[False, False],
                    b_bcast=[True, False])
    # a base-class generation-17 device: 128x128x512 tiles, 4x4 simdgroups, swizzle_log 1 from 4 tile rows
    yield gemm_case("gemm", "bf16", [], 520, 260, 700, devc=G17)
    yield gemm_case("gemm", "f16", [], 200, 300, 512, ta=True, tb=True, devc=G17)
    yield gemm_case("gemm", "f32", [], 130, 128, 256, tb=True, devc=G17)
    # AddMM: alpha/beta (do_axpby), a bias row (use_out_source alone), a column, batched C with has_batch
    yield addmm_case("addmm_axpby", "f32", [], 100, 130, 70, 0.5, 2.0)
    yield addmm_case("addmm_bias", "f16", [], 72, 200, 100, 1.0, 1.0, tb=True, c_kind="row")
    yield addmm_case("addmm_col", "bf16", [], 64, 80, 48, 1.0, 0.5, ta=True, c_kind="col")
    yield addmm_case("addmm_has_batch", "f16", [2, 3], 20, 140, 16, 1.5, 0.25, b_bcast=[True, False])
    # Split-k (one batch, K large against M and N): 64x64x256 partitions of K / 2 (K <= 1024), 1024, 2048; the
    # 128x128x512 tile with 4096-wide partitions; the accumulation plain and axpby
    yield gemm_case("splitk", "f16", [], 64, 96, 700)                         # 2 partitions of 350
    yield gemm_case("splitk", "bf16", [], 100, 50, 2000, tb=True)              # 1024: the last one 976
    yield gemm_case("splitk", "f32", [], 128, 130, 3000, ta=True)              # 2048
    yield gemm_case("splitk", "f16", [], 40, 33, 601, ta=True, tb=True)        # 3 partitions of 300, the last 1
    yield gemm_case("splitk_large", "bf16", [], 520, 512, 4500)               # 128x128x512, 4096 + 404
    yield addmm_case("splitk_addmm", "f32", [], 50, 60, 700, 0.5, 1.5, tb=True)
    yield addmm_case("splitk_addmm", "f16", [], 48, 32, 256, 1.0, 1.0, c_kind="row")
    # GatherMM with sorted right indices: 16, 32 or 64 rows a tile by rows per expert
    yield gather_rhs_nax_case("f16", 40, 200, 100, 4)                         # 10 rows per expert: bm 16
    yield gather_rhs_nax_case("bf16", 100, 128, 256, 3, tb=True)               # 33: bm 32, N and K aligned
    yield gather_rhs_nax_case("f32", 200, 130, 130, 2)                         # 100: bm 64 (2x4 simdgroups)
    # SegmentedMM: bk by the average segment; one empty segment; the edges seen through strides (1, 1)
    yield segmented_case("f16", 100, 70, 600, [0, 150, 420, 600])                      # average 200: bk 128
    yield segmented_case("bf16", 64, 128, 2048, [0, 700, 1024, 1600, 2048], tb=True)   # 512: bk 256, aligned
    yield segmented_case("f32", 50, 90, 200, [0, 30, 70, 70, 150, 200], ta=True, contiguous=False)  # 40: bk 64


def attention_cases():
    # bq 64, bk 32: D 64 / 96 / 128 (4x1 simdgroups)
    yield attention_case("full", "f16", 2, 4, 4, 128, 128, 64)                     # aligned Q and K
    yield attention_case("causal", "bf16", 1, 4, 2, 100, 100, 128, causal=True)    # partial Q (36) and K (4) blocks
    yield attention_case("causal.offset", "f16", 2, 4, 1, 70, 150, 96, causal=True)  # qL_off 80, gqa 4
    yield attention_case("boolmask.qtransposed", "bf16", 1, 4, 4, 50, 77, 64, q_layout="blhd", mask="bool")
    yield attention_case("floatmask.bcast", "f16", 2, 4, 2, 33, 48, 128, mask="float", mask_base=(1, 1, 33, 48))
    yield attention_case("floatmask", "bf16", 1, 2, 2, 128, 130, 96, mask="float")  # aligned Q, partial K
    yield attention_case("sinks.kvcache", "bf16", 2, 4, 2, 20, 90, 128, kv_cap=128, kv_row0=7, sinks=True)
    yield attention_case("kvtransposed", "f16", 1, 8, 2, 64, 160, 128, q_layout="blhd", kv_layout="blhd")
    yield attention_case("causal.sinks", "f32", 1, 4, 1, 72, 72, 64, causal=True, sinks=True)  # float32 (tf32 on)
    # the head-dim split kernel (D 256, 4x2 simdgroups): causal, >= 1024 queries, no array mask
    yield attention_case("dsplit.causal", "f16", 1, 2, 1, 1024, 1024, 256, causal=True)
    # key length 1040 in a 1088-row cache: widened to 1056 (rows behind the view), the causal offset stays 16
    yield attention_case("dsplit.causal.widened", "bf16", 1, 2, 2, 1024, 1040, 256, causal=True, kv_cap=1088,
                         widened=1056)
    # ... and 1030 keys filling their buffer: no rows behind them, kept at 1030 (partial last key block)
    yield attention_case("dsplit.causal.partial", "f16", 1, 2, 1, 1030, 1030, 256, causal=True)


def quantized_cases():
    A = "affine"
    Q, dev = qz.Q, QDEV
    # qmm_t_nax through qmm (batched w: no split-k); the vector limit on a 'd' device is 32 (18 past K or N 2048)
    yield qz.qcase("qmm_t_nax_batch", Q(A, "f16", (2, 40, 256), 128, gs=64, bits=4, w_batch=(2,), dev=dev),
                   family="quantized_nax")                                          # bm 64, alN
    yield qz.qcase("qmm_t_nax_batch", Q(A, "bf16", (2, 32, 128), 100, gs=32, bits=8, w_batch=(2,), dev=dev),
                   family="quantized_nax")                                          # bm 32 (M <= 32), N partial
    yield qz.qcase("qmm_t_nax_batch", Q(A, "f32", (3, 50, 256), 64, gs=128, bits=4, w_batch=(3,), dev=dev),
                   family="quantized_nax")
    yield qz.qcase("qmm_t_nax_batch_bcast_x", Q(A, "bf16", (3, 36, 128), 64, gs=64, bits=4, w_batch=(3,),
                                                x_strides=(0, 128, 1), dev=dev), family="quantized_nax")
    yield qz.qcase("qmm_t_nax_batch", Q(A, "f16", (2, 33, 256), 72, gs=64, bits=3, w_batch=(2,), dev=dev),
                   family="quantized_nax")
    yield qz.qcase("qmm_t_nax_batch", Q(A, "bf16", (2, 24, 2560), 64, gs=32, bits=6, w_batch=(2,), dev=dev),
                   family="quantized_nax")                                          # K 2560: limit 18, bm 32
    # one matrix: qmm_splitk finds no split > 1 (one K partition, or >= 257 32x32 tiles) and falls back to qmm
    yield qz.qcase("qmm_t_nax", Q(A, "f16", (70, 64), 96, gs=64, bits=8, dev=dev), family="quantized_nax")
    yield qz.qcase("qmm_t_nax", Q(A, "bf16", (40, 128), 192, gs=128, bits=4, dev=dev), family="quantized_nax")
    yield qz.qcase("qmm_t_nax", Q(A, "f16", (544, 128), 544, gs=32, bits=4, dev=dev), family="quantized_nax")
    # fp formats (scales e8m0 / e4m3, no biases)
    yield qz.qcase("qmm_t_nax_batch", Q("mxfp4", "f16", (2, 40, 256), 128, w_batch=(2,), dev=dev),
                   family="quantized_nax")
    yield qz.qcase("qmm_t_nax", Q("nvfp4", "bf16", (288, 64), 1024, dev=dev), family="quantized_nax")
    yield qz.qcase("qmm_t_nax_batch", Q("mxfp8", "f32", (2, 33, 128), 80, w_batch=(2,), dev=dev),
                   family="quantized_nax")
    yield qz.qcase("qmm_t_nax_batch", Q("mxfp4", "bf16", (2, 24, 2560), 64, w_batch=(2,), dev=dev),
                   family="quantized_nax")                                          # bm 32
    # gather_qmm_nax (unsorted indices, M >= the vector limit)
    yield qz.qcase("gather_qmm_t_nax", Q(A, "f16", (2, 40, 128), 96, gs=64, bits=4, w_batch=(3,), idx_shape=(4,),
                                         dev=dev), family="quantized_nax")
    yield qz.qcase("gather_qmm_t_nax", Q("nvfp4", "f32", (3, 33, 64), 64, w_batch=(2,), idx_shape=(2, 2),
                                         dev=dev), family="quantized_nax")
    # gather_qmm_rhs_nax: one row per index, right indices sorted, no left ones
    yield qz.qcase("gather_qmm_rhs_nax", Q(A, "bf16", (40, 1, 256), 100, gs=64, bits=4, w_batch=(4,),
                                           idx_shape=(40,), sorted_rhs=True, dev=dev), family="quantized_nax")
    yield qz.qcase("gather_qmm_rhs_nax", Q("mxfp8", "f16", (256, 1, 128), 128, w_batch=(2,), idx_shape=(256,),
                                           sorted_rhs=True, dev=dev), family="quantized_nax")  # bm 64


def cases():
    yield from gemm_cases()
    yield from attention_cases()
    yield from quantized_cases()
