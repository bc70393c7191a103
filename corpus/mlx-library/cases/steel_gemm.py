"""Steel GEMM (kernels/steel/gemm/kernels/steel_gemm_{fused,splitk,gather}.metal), launched as
mlx/backend/metal/matmul.cpp launches them for Matmul, AddMM and GatherMM.

Device class: the host picks tiles by `d.get_architecture().back()`. These cases take an M3 Ultra
("applegpu_g15d": class 'd', the large-device branch of GEMM_TPARAM_MACRO; generation 15, so no NAX kernels (those
need generation >= 17) but the generation-15 wide-gemv routes exist), so:
- fused gemm tiles: f16/bf16 64x64x16 (1x2 simdgroups), or nt 64x32x32 (2x2); large (batch*M*N >= 2^20) f16/bf16
  with K >= 2*max(M, N): nt 64x32x32 (2x2), nn 32x64x16 (1x2); f32 small nt 32x64x16 (1x2), small other 64x32x32
  (2x2), large f32 the default 64x64x16 (2x2); swizzle_log 0;
- split-k for one batch when ceil(M/16)*ceil(N/16) <= 2048, K/16 >= 8 and K >= max(M, N);
- the wide-gemv routes (generation >= 15, f16/bf16 nt with M <= 15) are avoided: every nt f16/bf16 case has M > 15.
Launch details mirrored: GEMMParams / GEMMAddMMParams / GEMMSpiltKParams packed as the kernel reads them, function
constants has_batch (10), use_out_source (100), do_axpby (110), align_M/N/K (200-202), batch shape/strides vectors,
check_transpose's lda/ldb from the operands' strides, collapse_batches, the batch-into-M collapse, the split-k
partition count and the accumulation pass (get_block_dims threadgroups).
References: numpy float64 matmul of the inputs as stored, plus alpha/beta and C for AddMM."""
import struct

import numpy as np

from mlxhost import block_dims, ceildiv, collapse_contiguous_dims, row_strides
from mlxrun import Case, f32, i32, itemsize, tname, vec

FILE_FUSED = "steel/gemm/kernels/steel_gemm_fused.metal"
FILE_SPLITK = "steel/gemm/kernels/steel_gemm_splitk.metal"
FILE_GATHER = "steel/gemm/kernels/steel_gemm_gather.metal"
DEVC = "d"  # applegpu_g15d (M3 Ultra)


# ------------------------------------------------------------------------------------------------ host helpers
def next_pow2(n):
    return 1 << (int(n) - 1).bit_length() if n > 1 else 1


def gemm_tparams(devc, dt, ta, tb, M, N, K, batch_size_out, complex_out=False):
    """GEMM_TPARAM_MACRO: (bm, bn, bk, wm, wn)."""
    bm, bn, bk, wm, wn = 64, 64, 16, 2, 2
    nt = (not ta) and tb
    if devc in ("g", "p"):
        if complex_out:
            return 64, 32, 8, 4, 1
        if nt:
            return 64, 32, 32, 2, 2
        if dt != "f32":
            return 64, 64, 16, 1, 2
        return bm, bn, bk, wm, wn
    if devc == "d":
        if batch_size_out * M * N >= (1 << 20):
            if dt != "f32":
                if 2 * max(M, N) > K:
                    return 64, 64, 16, 1, 2
                if nt:
                    return 64, 32, 32, 2, 2
                return 32, 64, 16, 1, 2
            return bm, bn, bk, wm, wn
        if dt != "f32":
            return (64, 32, 32, 2, 2) if nt else (64, 64, 16, 1, 2)
        return (32, 64, 16, 1, 2) if nt else (64, 32, 32, 2, 2)
    return 64, 64, 16, 2, 2


def gemm_params(M, N, K, lda, ldb, ldd, tn, tm, bsa, bsb, bsd, swizzle_log, k_iters, batch_ndim):
    """GEMMParams: 8 ints, 3 int64, 3 ints, padded to 8-byte alignment (72 bytes)."""
    return struct.pack("<8i3q3i4x", M, N, K, lda, ldb, ldd, tn, tm, bsa, bsb, bsd, swizzle_log, k_iters, batch_ndim)


def addmm_params(ldc, fdc, bsc, alpha, beta):
    """GEMMAddMMParams: int ldc, int fdc, int64 batch_stride_c, float alpha, float beta (24 bytes)."""
    return struct.pack("<2iq2f", ldc, fdc, bsc, alpha, beta)


def splitk_params(*ints):
    """GEMMSpiltKParams: 13 ints."""
    assert len(ints) == 13
    return struct.pack("<13i", *ints)


def check_transpose(shape, strides, is_vector):
    """(transposed, leading dimension); MLX copies any other layout (not exercised here)."""
    stx, sty = strides[-2], strides[-1]
    if sty == 1 and (not is_vector or stx == shape[-1]):
        return False, stx
    if stx == 1 and (not is_vector or sty == shape[-2]):
        return True, sty
    raise NotImplementedError("operand needs a contiguous copy")


def collapse_batches(shape, *strides_lists):
    """The batch dims of the (broadcast) operands, merged where contiguous in every operand."""
    if len(shape) == 2:
        return [1], [[0] for _ in strides_lists]
    bshape = list(shape[:-2])
    cshape, cstrides = collapse_contiguous_dims(bshape, *[list(s[:-2]) for s in strides_lists])
    if not cshape:
        return [1], [[0] for _ in strides_lists]
    return cshape, cstrides


# ------------------------------------------------------------------------------------------------ operands
class Operand:
    """A logical (batch..., rows, cols) array held in a buffer: stored row-major as (stored batch..., rows, cols), or
    (..., cols, rows) when `trans`; batch dims flagged in `bcast` have stride 0 (broadcast by the matmul op)."""

    def __init__(self, ctx, dt, bshape, rows, cols, trans=False, bcast=None):
        bcast = list(bcast or [False] * len(bshape))
        stored_b = [d for d, b in zip(bshape, bcast) if not b]
        mat = (cols, rows) if trans else (rows, cols)
        self.buf, vals = ctx.rand(tuple(stored_b) + mat, dt)
        base_strides = row_strides(list(stored_b) + list(mat))
        strides, k = [], 0
        for d, b in zip(bshape, bcast):
            strides.append(0 if b else base_strides[k])
            k += 0 if b else 1
        strides += [1, rows] if trans else [cols, 1]
        self.shape = list(bshape) + [rows, cols]
        self.strides = strides
        v = np.swapaxes(vals, -1, -2) if trans else vals
        idx = tuple(slice(None) if not b else None for b in bcast)
        v = v[idx + (slice(None), slice(None))] if bcast and any(bcast) else v
        self.values = np.broadcast_to(v, self.shape)


# ------------------------------------------------------------------------------------------------ launchers
def fused_name(ta, tb, dt, tile):
    bm, bn, bk, wm, wn = tile
    return (f"steel_gemm_fused_{'t' if ta else 'n'}{'t' if tb else 'n'}_{tname(dt)}_{tname(dt)}"
            f"_bm{bm}_bn{bn}_bk{bk}_wm{wm}_wn{wn}")


def splitk_names(ta, tb, dt, M, N, K, do_axpby):
    bm = 16 if M < 40 else 32
    bn = 16 if N < 40 else 32
    mn_aligned = M % bm == 0 and N % bn == 0
    k_aligned = K % 16 == 0
    gemm = (f"steel_gemm_splitk_{'t' if ta else 'n'}{'t' if tb else 'n'}_{tname(dt)}_float32"
            f"_bm{bm}_bn{bn}_bk16_wm2_wn2_MN_{'t' if mn_aligned else 'n'}aligned_K_{'t' if k_aligned else 'n'}aligned")
    accum = f"steel_gemm_splitk_accum_{tname(dt)}_float32" + ("_axbpy" if do_axpby else "")
    return gemm, accum, bm, bn


def use_splitk(M, N, K, batch_size_out):
    tm, tn, tk = ceildiv(M, 16), ceildiv(N, 16), K // 16
    threshold = 2048 if DEVC in ("s", "d") else 1024
    return batch_size_out == 1 and tm * tn <= threshold and tk >= 8 and K >= max(M, N)


def launch_regular(ctx, dt, a, b, c, out, M, N, K, batch_size_out, lda, ldb, ta, tb, batch_shape, batch_strides,
                   bsa, bsb, bsc, alpha, beta, check_ab, c_ld=None):
    tile = gemm_tparams(DEVC, dt, ta, tb, M, N, K, batch_size_out)
    return launch_fused(ctx, fused_name(ta, tb, dt, tile), tile, 0, a, b, c, out, M, N, K, batch_size_out, lda, ldb,
                        batch_shape, batch_strides, bsa, bsb, bsc, alpha, beta, check_ab, c_ld)


def launch_fused(ctx, name, tile, swizzle_log, a, b, c, out, M, N, K, batch_size_out, lda, ldb, batch_shape,
                 batch_strides, bsa, bsb, bsc, alpha, beta, check_ab, c_ld):
    """One fused GEMM launch with tile (bm, bn, bk, wm, wn): steel_gemm_fused and its NAX twin read the same function
    constants, GEMMParams, batch vectors and AddMM parameters. Returns the entry point's name."""
    bm, bn, bk, wm, wn = tile
    has_batch = len(batch_shape) > 1
    use_out_source = check_ab and (alpha != 0.0 or beta != 1.0)
    do_axpby = use_out_source and (alpha != 1.0 or beta != 1.0)
    consts = {10: has_batch, 100: use_out_source, 110: do_axpby, 200: M % bm == 0, 201: N % bn == 0,
              202: K % bk == 0}
    tn, tm = ceildiv(N, bn), ceildiv(M, bm)
    params = gemm_params(M, N, K, lda, ldb, N, tn, tm, bsa, bsb, M * N, swizzle_log, K // bk, len(batch_shape))
    tile_sz = 1 << swizzle_log
    args = {0: a, 1: b, 3: out, 4: params}
    if has_batch:
        args[6] = vec(batch_shape, np.int32)
        args[7] = vec(batch_strides, np.int64)
    if use_out_source:
        ldc, fdc = c_ld
        args[2] = c
        args[5] = addmm_params(ldc, fdc, bsc, alpha, beta)
    ctx.launch(name, args, groups=(tn * tile_sz, ceildiv(tm, tile_sz), batch_size_out), threadgroup=(32, wn, wm),
               constants=consts)
    return name


def launch_splitk(ctx, dt, a, b, c, out, M, N, K, lda, ldb, ta, tb, alpha, beta, check_ab, c_ld=None):
    do_axpby = check_ab and (alpha != 1.0 or beta != 0.0)
    gemm, accum, bm, bn = splitk_names(ta, tb, dt, M, N, K, do_axpby)
    tm32, tn32, tk = ceildiv(M, 32), ceildiv(N, 32), K // 16
    parts = min(max(2, next_pow2(tk // (tm32 * tn32))), 32)
    k_iters = (K // 16) // parts
    c_split = ctx.empty(parts * M * N * 4)  # float32 partials
    tn, tm = ceildiv(N, bn), ceildiv(M, bm)
    params = splitk_params(M, N, K, lda, ldb, N, tn, tm, parts, M * N, k_iters * 16, 0, k_iters)
    ctx.launch(gemm, {0: a, 1: b, 2: c_split, 3: params}, groups=(tn, tm, parts), threadgroup=(32, 2, 2))
    args = {0: c_split, 1: out, 2: i32(parts), 3: i32(M * N), 4: i32(N)}
    if do_axpby:
        ldc, fdc = c_ld
        args.update({5: c, 6: i32(ldc), 7: i32(fdc), 8: f32(alpha), 9: f32(beta)})
    ctx.launch(accum, args, grid=(N, M, 1), threadgroup=block_dims(N, M, 1))
    return parts


def steel_matmul_axpby(ctx, dt, a, b, c, out, M, N, K, batch_size_out, lda, ldb, ta, tb, batch_shape, a_bs, b_bs,
                       c_bs, alpha, beta, check_ab, c_ld):
    """steel_matmul_axpby after the caller collapsed the batches (batch_shape given)."""
    if use_splitk(M, N, K, batch_size_out):
        return launch_splitk(ctx, dt, a.buf, b.buf, c.buf if c else None, out, M, N, K, lda, ldb, ta, tb, alpha,
                             beta, check_ab, c_ld)
    strides = list(a_bs) + list(b_bs) + (list(c_bs) if check_ab and c_bs else [])
    return launch_regular(ctx, dt, a.buf, b.buf, c.buf if c else None, out, M, N, K, batch_size_out, lda, ldb, ta,
                          tb, batch_shape, strides, a_bs[-1] if a_bs else 0, b_bs[-1] if b_bs else 0,
                          c_bs[-1] if c_bs else 0, alpha, beta, check_ab, c_ld)


def matmul(ctx, dt, a, b, out_shape, out, axpby=None):
    """Matmul::eval_gpu for M, N > 1 (the gemv and wide-gemv routes are not taken by these shapes). axpby: the
    steel_matmul_axpby to route through (default this device's; cases/nax.py passes the NAX device's)."""
    M, N, K = a.shape[-2], b.shape[-1], a.shape[-1]
    ta, lda = check_transpose(a.shape, a.strides, M == 1)
    tb, ldb = check_transpose(b.shape, b.strides, N == 1)
    batch_shape, (a_bs, b_bs) = collapse_batches(a.shape, a.strides, b.strides)
    batch_size_out = int(np.prod(out_shape)) // (M * N)
    if (batch_size_out > 1 and not ta and len(batch_shape) == 1 and a.strides[-2] == K and a_bs[-1] == M * K
            and b_bs[-1] == 0):
        M *= batch_shape[-1]
        batch_size_out = 1
        a_bs, b_bs, batch_shape = [0], [0], [1]
    assert min(M, N) > 1 and not (not ta and tb and dt != "f32" and M <= 15)
    return (axpby or steel_matmul_axpby)(ctx, dt, a, b, None, out, M, N, K, batch_size_out, lda, ldb, ta, tb,
                                         batch_shape, a_bs, b_bs, [], 1.0, 0.0, False, None)


def addmm(ctx, dt, a, b, c, out_shape, out, alpha, beta, axpby=None):
    """AddMM::eval_gpu (c already broadcast to the output shape, as the addmm op does); axpby as for matmul."""
    M, N, K = a.shape[-2], b.shape[-1], a.shape[-1]
    ta, lda = check_transpose(a.shape, a.strides, M == 1)
    tb, ldb = check_transpose(b.shape, b.strides, N == 1)
    batch_shape, (a_bs, b_bs, c_bs) = collapse_batches(a.shape, a.strides, b.strides, c.strides)
    batch_size_out = int(np.prod(out_shape)) // (M * N)
    if (batch_size_out > 1 and not ta and len(batch_shape) == 1 and a.strides[-2] == K and a_bs[-1] == M * K
            and c_bs[-1] == M * c.strides[-2] and b_bs[-1] == 0):
        M *= batch_shape[-1]
        batch_size_out = 1
        a_bs, b_bs, c_bs, batch_shape = [0], [0], [0], [1]
    assert min(M, N) > 1 and not (not ta and tb and dt != "f32" and M <= 15)
    return (axpby or steel_matmul_axpby)(ctx, dt, a, b, c, out, M, N, K, batch_size_out, lda, ldb, ta, tb,
                                         batch_shape, a_bs, b_bs, c_bs, alpha, beta, True,
                                         (c.strides[-2], c.strides[-1]))


def matmul_kernels(dt, ta, tb, M, N, K, batch_size_out, do_axpby=False, collapse_m=1):
    """The entry points a case launches (for Case.kernels)."""
    M *= collapse_m
    if collapse_m > 1:
        batch_size_out = 1
    if use_splitk(M, N, K, batch_size_out):
        gemm, accum, _, _ = splitk_names(ta, tb, dt, M, N, K, do_axpby)
        return [gemm, accum]
    return [fused_name(ta, tb, dt, gemm_tparams(DEVC, dt, ta, tb, M, N, K, batch_size_out))]


def gemm_tol(dt, K):
    # float32: accumulation error grows with K (about eps * K / 4 absolute for these inputs); halves: the output's
    # rounding dominates, the dtype default holds.
    return 1e-5 + 2e-8 * K if dt == "f32" else None


def shape_str(*dims):
    return "x".join(str(d) for d in dims)


# ------------------------------------------------------------------------------------------------ cases
def matmul_case(variant, dt, bshape, M, N, K, ta=False, tb=False, a_bcast=None, b_bcast=None):
    collapse = 1
    if (a_bcast is None or not any(a_bcast)) and b_bcast and all(b_bcast) and len(bshape) == 1 and not ta:
        collapse = bshape[0]
    bso = int(np.prod(bshape)) if bshape else 1
    names = matmul_kernels(dt, ta, tb, M, N, K, bso, collapse_m=collapse)
    file = FILE_SPLITK if "splitk" in names[0] else FILE_FUSED
    tr = ("t" if ta else "n") + ("t" if tb else "n")

    def run(ctx):
        a = Operand(ctx, dt, bshape, M, K, ta, a_bcast)
        b = Operand(ctx, dt, bshape, K, N, tb, b_bcast)
        out_shape = list(bshape) + [M, N]
        out = ctx.empty(int(np.prod(out_shape)) * itemsize(dt))
        matmul(ctx, dt, a, b, out_shape, out)
        got = ctx.read(out, dt, out_shape)
        ctx.check("out", got, np.matmul(a.values, b.values), tol=gemm_tol(dt, K), dt=dt)

    return Case(f"steel_gemm.{variant}_{tr}.{dt}.{shape_str(*bshape, M, N, K)}", "steel_gemm", file, names, run)


def addmm_case(variant, dt, bshape, M, N, K, alpha, beta, ta=False, tb=False, c_kind="full", b_bcast=None):
    """c_kind: full (batch..., M, N), row (N,) broadcast over rows (ldc 0), col (M, 1) broadcast over columns."""
    bso = int(np.prod(bshape)) if bshape else 1
    use_out_source = alpha != 0.0 or beta != 1.0
    names_probe = matmul_kernels(dt, ta, tb, M, N, K, bso, do_axpby=(alpha != 1.0 or beta != 0.0))
    file = FILE_SPLITK if "splitk" in names_probe[0] else FILE_FUSED
    assert use_out_source
    tr = ("t" if ta else "n") + ("t" if tb else "n")

    def run(ctx):
        a = Operand(ctx, dt, bshape, M, K, ta)
        b = Operand(ctx, dt, bshape, K, N, tb, b_bcast)
        out_shape = list(bshape) + [M, N]
        if c_kind == "full":
            c = Operand(ctx, dt, bshape, M, N)
        else:
            # A bias stored as one row (or column) and broadcast to the output shape: batch strides 0 and
            # ldc = 0 (row) or fdc = 0 (col).
            vec_len = N if c_kind == "row" else M
            c = Operand(ctx, dt, [], 1, vec_len)
            c.values = np.broadcast_to(c.values.reshape((1, N) if c_kind == "row" else (M, 1)), out_shape)
            c.shape = out_shape
            c.strides = [0] * len(bshape) + ([0, 1] if c_kind == "row" else [1, 0])
        out = ctx.empty(int(np.prod(out_shape)) * itemsize(dt))
        addmm(ctx, dt, a, b, c, out_shape, out, alpha, beta)
        got = ctx.read(out, dt, out_shape)
        want = alpha * np.matmul(a.values, b.values) + beta * c.values
        ctx.check("out", got, want, tol=gemm_tol(dt, K), dt=dt)

    return Case(f"steel_gemm.{variant}_{tr}.{dt}.{shape_str(*bshape, M, N, K)}", "steel_gemm", file, names_probe, run)


def splitk_accum_case(dt, M, N, parts, alpha=None, beta=None):
    """The split-k accumulation pass alone (no simdgroups: it also runs on devices with narrow subgroups), on
    float32 partials as the split-k gemm leaves them: D = sum over partitions (then alpha * D + beta * C)."""
    axpby = alpha is not None
    name = f"steel_gemm_splitk_accum_{tname(dt)}_float32" + ("_axbpy" if axpby else "")

    def run(ctx):
        c_split, parts_v = ctx.rand((parts, M, N), "f32", -4, 4)
        out = ctx.empty(M * N * itemsize(dt))
        args = {0: c_split, 1: out, 2: i32(parts), 3: i32(M * N), 4: i32(N)}
        want = parts_v.sum(axis=0)
        if axpby:
            # C as a transposed view (ldc 1, fdc M): the kernel reads it through both strides.
            cbuf, cv = ctx.rand((N, M), dt)
            args.update({5: cbuf, 6: i32(1), 7: i32(M), 8: f32(alpha), 9: f32(beta)})
            want = alpha * want + beta * cv.T
        ctx.launch(name, args, grid=(N, M, 1), threadgroup=block_dims(N, M, 1))
        ctx.check("out", ctx.read(out, dt, (M, N)), want, dt=dt)

    return Case(f"steel_gemm.splitk_accum{'_axbpy' if axpby else ''}.{dt}.{parts}x{M}x{N}", "steel_gemm",
                FILE_SPLITK, [name], run)


# ------------------------------------------------------------------------------------------------ gather_mm
def gather_name(ta, tb, dt, tile, rhs=False):
    bm, bn, bk, wm, wn = tile
    pre = "steel_gather_mm_rhs_" if rhs else "steel_gather_mm_"
    return (f"{pre}{'t' if ta else 'n'}{'t' if tb else 'n'}_{tname(dt)}_{tname(dt)}"
            f"_bm{bm}_bn{bn}_bk{bk}_wm{wm}_wn{wn}")


def gather_case(dt, M, N, K, n_a, n_b, idx_shape, ta=False, tb=False, rhs_bcast_axis=None):
    """GatherMM with M, N > 1: out[i] = A[lhs[i]] @ B[rhs[i]] over the index arrays' shape (broadcast together).
    rhs_bcast_axis: the rhs index array is stored without that axis (stride 0), as broadcasting leaves it."""
    batch_ndim = len(idx_shape)
    bso = int(np.prod(idx_shape))
    tile = gemm_tparams(DEVC, dt, ta, tb, M, N, K, bso)
    name = gather_name(ta, tb, dt, tile)
    assert not (not ta and tb and dt != "f32" and M <= 15)  # the wide gather route
    tr = ("t" if ta else "n") + ("t" if tb else "n")

    def run(ctx):
        a = Operand(ctx, dt, [n_a], M, K, ta)
        b = Operand(ctx, dt, [n_b], K, N, tb)
        lhs = ctx.rng.integers(0, n_a, size=idx_shape).astype(np.uint32)
        if rhs_bcast_axis is None:
            rhs = ctx.rng.integers(0, n_b, size=idx_shape).astype(np.uint32)
            rhs_strides = row_strides(idx_shape)
        else:
            stored = [d for i, d in enumerate(idx_shape) if i != rhs_bcast_axis]
            rhs_stored = ctx.rng.integers(0, n_b, size=stored).astype(np.uint32)
            rhs = np.broadcast_to(np.expand_dims(rhs_stored, rhs_bcast_axis), idx_shape)
            st = row_strides(stored)
            rhs_strides = st[:rhs_bcast_axis] + [0] + st[rhs_bcast_axis:]
        lhs_buf = ctx.buffer(lhs)
        rhs_buf = ctx.buffer(np.ascontiguousarray(rhs_stored if rhs_bcast_axis is not None else rhs))
        lhs_strides = row_strides(idx_shape)
        out_shape = list(idx_shape) + [M, N]
        out = ctx.empty(bso * M * N * itemsize(dt))
        # gather_mm()
        ta_, lda = check_transpose(a.shape, a.strides, False)
        tb_, ldb = check_transpose(b.shape, b.strides, False)
        assert (ta_, tb_) == (ta, tb)  # the kernel name's transposes come from check_transpose
        bm, bn, bk, wm, wn = tile
        has_batch = batch_ndim > 1
        consts = {10: has_batch, 200: M % bm == 0, 201: N % bn == 0, 202: K % bk == 0}
        tn, tm = ceildiv(N, bn), ceildiv(M, bm)
        params = gemm_params(M, N, K, lda, ldb, N, tn, tm, lhs_strides[0] if batch_ndim else 0,
                             rhs_strides[0] if batch_ndim else 0, M * N, 0, K // bk, batch_ndim)
        args = {0: a.buf, 1: b.buf, 2: lhs_buf, 3: rhs_buf, 4: out, 5: params,
                6: vec(idx_shape, np.int32), 7: vec(lhs_strides, np.int64), 8: vec(rhs_strides, np.int64),
                9: i32(len(a.shape) - 2), 10: vec(a.shape, np.int32), 11: vec(a.strides, np.int64),
                12: i32(len(b.shape) - 2), 13: vec(b.shape, np.int32), 14: vec(b.strides, np.int64)}
        ctx.launch(name, args, groups=(tn, tm, bso), threadgroup=(32, wn, wm), constants=consts)
        got = ctx.read(out, dt, out_shape)
        want = np.matmul(a.values[lhs.astype(np.int64)], b.values[np.asarray(rhs).astype(np.int64)])
        ctx.check("out", got, want, tol=gemm_tol(dt, K), dt=dt)

    return Case(f"steel_gemm.gather_{tr}.{dt}.{shape_str(*idx_shape, M, N, K)}", "steel_gemm", FILE_GATHER, [name],
                run)


def gather_rhs_case(dt, T, N, K, n_b, tb=False):
    """GatherMM with M == 1 and sorted rhs indices: gather_mm_rhs, the rows of A (T, 1, K) each against B[rhs[t]]."""
    tile = (16, 64, 16, 1, 2)
    name = gather_name(False, tb, dt, tile, rhs=True)

    def run(ctx):
        a = Operand(ctx, dt, [T], 1, K)
        b = Operand(ctx, dt, [n_b], K, N, tb)
        rhs = np.sort(ctx.rng.integers(0, n_b, size=T)).astype(np.uint32)
        rhs_buf = ctx.buffer(rhs)
        out = ctx.empty(T * N * itemsize(dt))
        # ensure_batch_contiguous(b)
        stx, sty = b.strides[-2], b.strides[-1]
        if sty == 1 and (N != 1 or stx == N):
            tb_, ldb = False, stx
        else:
            assert stx == 1
            tb_, ldb = True, sty
        assert tb_ == tb  # the kernel name's transpose comes from ensure_batch_contiguous
        M = T  # a.size() / K
        bm, bn, bk, wm, wn = tile
        consts = {200: M % bm == 0, 201: N % bn == 0, 202: K % bk == 0}
        tn, tm = ceildiv(N, bn), ceildiv(M, bm)
        params = gemm_params(M, N, K, K, ldb, N, tn, tm, 0, b.strides[-3], 0, 0, K // bk, 0)
        ctx.launch(name, {0: a.buf, 1: b.buf, 2: rhs_buf, 3: out, 4: params}, groups=(tn, tm, 1),
                   threadgroup=(32, wn, wm), constants=consts)
        got = ctx.read(out, dt, (T, 1, N))
        want = np.matmul(a.values, b.values[rhs.astype(np.int64)])
        ctx.check("out", got, want, tol=gemm_tol(dt, K), dt=dt)

    return Case(f"steel_gemm.gather_rhs_n{'t' if tb else 'n'}.{dt}.{shape_str(T, N, K)}", "steel_gemm", FILE_GATHER,
                [name], run)


def cases():
    # Regular fused gemm, one matrix, partial tiles in M, N and K, each transpose, each dtype.
    yield matmul_case("gemm", "f32", [], 100, 70, 50)                          # 64x32x32 2x2, nothing aligned
    yield matmul_case("gemm", "f32", [], 128, 96, 64, tb=True)                  # 32x64x16 1x2, align M and K
    yield matmul_case("gemm", "f16", [], 65, 130, 33, ta=True)                  # 64x64x16 1x2
    yield matmul_case("gemm", "bf16", [], 96, 64, 40, ta=True, tb=True)         # 64x64x16 1x2, align N
    yield matmul_case("gemm", "f16", [], 200, 72, 100, tb=True)                 # 64x32x32 2x2
    yield matmul_case("gemm", "bf16", [], 128, 128, 64)                         # all aligned
    yield matmul_case("gemm", "f32", [], 77, 45, 30, ta=True, tb=True)          # f32 tt
    # Large (batch*M*N >= 2^20) tiles.
    yield matmul_case("gemm_large", "f16", [], 1024, 1024, 256)                 # 64x64x16 1x2
    yield matmul_case("gemm_large", "bf16", [], 1024, 1024, 2560, tb=True)      # nt, K > 2 max(M, N): 64x32x32
    yield matmul_case("gemm_large", "f16", [], 1024, 1040, 2100)                # nn, large K: 32x64x16, align_N no
    yield matmul_case("gemm_large", "f32", [], 1024, 1024, 48)                  # f32 default 64x64x16 2x2
    # Batches: plain stride (has_batch false), broadcast B folded into M, two-level broadcast (has_batch).
    yield matmul_case("gemm_batched", "f16", [4], 70, 50, 40, ta=True)
    yield matmul_case("gemm_batch_into_m", "f32", [3], 40, 50, 24, b_bcast=[True])
    yield matmul_case("gemm_has_batch", "bf16", [2, 3], 33, 40, 24, tb=True, a_bcast=[False, False],
                      b_bcast=[True, False])
    # AddMM: alpha/beta (do_axpby), bias rows (ldc 0), plain add (use_out_source without axpby), batched C.
    yield addmm_case("addmm_axpby", "f32", [], 100, 70, 50, 0.5, 2.0)
    yield addmm_case("addmm_bias", "f16", [], 72, 100, 40, 1.0, 1.0, tb=True, c_kind="row")
    yield addmm_case("addmm_col", "bf16", [], 64, 80, 48, 1.0, 0.5, ta=True, c_kind="col")
    yield addmm_case("addmm_batched", "f32", [2], 40, 30, 20, 2.0, -1.0)
    yield addmm_case("addmm_has_batch", "f16", [2, 3], 20, 24, 16, 1.5, 0.25, b_bcast=[True, False])
    # Split-k: partition count from K and the tile count, unaligned and aligned, plain and axpby accumulation.
    yield matmul_case("splitk", "f32", [], 40, 24, 1000)                        # 32x16 tiles, 32 partitions
    yield matmul_case("splitk", "f16", [], 64, 64, 512, ta=True)                # aligned, 4 partitions
    yield matmul_case("splitk", "bf16", [], 33, 45, 300, tb=True)               # 16x32 tiles, K unaligned
    yield matmul_case("splitk", "f16", [], 24, 40, 256, ta=True, tb=True)       # tt, 16x32 tiles, 8 partitions
    yield addmm_case("splitk_addmm", "f32", [], 50, 60, 700, 0.5, 1.5, tb=True)
    yield addmm_case("splitk_addmm", "f16", [], 48, 32, 256, 1.0, 1.0, c_kind="row")
    yield splitk_accum_case("f32", 37, 29, 4)
    yield splitk_accum_case("bf16", 16, 50, 8, alpha=0.5, beta=2.0)
    yield splitk_accum_case("f16", 33, 20, 2, alpha=1.0, beta=1.0)
    # GatherMM.
    yield gather_case("f32", 33, 40, 20, 4, 3, [5])
    yield gather_case("f16", 64, 64, 32, 3, 5, [6], tb=True)
    yield gather_case("bf16", 40, 24, 17, 2, 3, [2, 3], ta=True, rhs_bcast_axis=0)
    yield gather_rhs_case("f32", 37, 70, 24, 4)
    yield gather_rhs_case("f16", 32, 64, 48, 3, tb=True)
