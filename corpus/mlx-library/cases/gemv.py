"""Matrix-vector products (gemv.metal), launched as mlx/backend/metal/matmul.cpp launches them.

Matmul::eval_gpu and AddMM::eval_gpu read the operands' strides (check_transpose: row-major, column-major, a vector
must be dense), collapse the batch dims (collapse_batches), fold a broadcast right-hand side's batch into M, then:
M == N == 1 goes to dot.metal (not here), the wide multi-vector gemv on Apple GPUs of generation 15 (M3) and later
(gemv_wide: f16/bf16, M in 2..15, N > 1, the matrix transposed, K % 4 == 0), and min(M, N) == 1 goes to gemv_axbpy:
`gemv_*` (the matrix row-major along K) or `gemv_t_*` (the matrix column-major along K), a block shape chosen by the
vector lengths (bm/bn threadgroups of simdgroups, sm x sn threads per simdgroup, tm x tn elements per thread),
`_nc1` when the batch does not collapse to one dim, `_axpby1` for addmm's alpha * (a @ b) + beta * c.

Also block_masked_mm's gemv route (BlockMaskedMM::eval_gpu: gemv_masked.metal, block masks of 32 or 64 on the
output and/or the operands, bool or multiplicative) and gather_mm's (GatherMM::eval_gpu -> gather_mv: gemv_gather_*,
gemv_t_gather_*, indices into the operands' batch dims).

The device model: MLX's host code asks the GPU's architecture generation; these cases are an M2 (generation 14)
unless the case says M3 (generation 15), which only changes the gemv_wide route.

Arrays are (flat base, shape, strides in elements, offset): the kernels see the base buffer at the offset with the
strides, as MLX passes views without copying when check_transpose accepts them.
"""
import math

import numpy as np

from mlxhost import ceildiv, collapse_contiguous_dims, row_strides, strided_view
from mlxrun import DTYPES, Case, f32, i32, itemsize, tname, vec

FILE = "gemv.metal"


class View:
    """An array as MLX holds it: shape, strides (elements) and offset into a flat base of `base_size` elements."""

    def __init__(self, shape, strides=None, offset=0, base_size=None):
        self.shape = [int(d) for d in shape]
        self.strides = [int(s) for s in (strides if strides is not None else row_strides(shape))]
        self.offset = int(offset)
        if base_size is None:
            base_size = offset + 1 + sum((d - 1) * abs(s) for d, s in zip(self.shape, self.strides))
        self.base_size = int(base_size)

    @property
    def ndim(self):
        return len(self.shape)

    def row_contiguous(self):
        return self.strides == row_strides(self.shape)


def permuted(base_shape, perm, offset=0):
    """numpy's transpose(perm) of a row-contiguous array of base_shape."""
    st = row_strides(base_shape)
    return View([base_shape[p] for p in perm], [st[p] for p in perm], offset, offset + int(np.prod(base_shape)))


def broadcast(shape, src_shape):
    """A row-contiguous array of src_shape broadcast (numpy rules) to `shape`: stride 0 on the new/size-1 dims."""
    src_st = row_strides(src_shape)
    pad = len(shape) - len(src_shape)
    strides = [0] * pad + [0 if (s == 1 and d != 1) else st for s, d, st in zip(src_shape, shape[pad:], src_st)]
    return View(shape, strides, 0, int(np.prod(src_shape)))


# ---------------------------------------------------------------------------------------------------------------
# Host logic (matmul.cpp)

def check_transpose(v, is_vector):
    """(transposed, leading dim) or None where MLX would copy to a contiguous array first."""
    stx, sty = v.strides[-2], v.strides[-1]
    if sty == 1 and (not is_vector or stx == v.shape[-1]):
        return False, stx
    if stx == 1 and (not is_vector or sty == v.shape[-2]):
        return True, sty
    return None


def collapse_batches(*views):
    """The batch dims (all but the last two) of a (and b, c), contiguous runs merged; [1], [0]... when none."""
    a = views[0]
    if a.ndim == 2:
        return [1], [[0] for _ in views]
    shape, strides = collapse_contiguous_dims(a.shape[:-2], *[v.strides[:-2] for v in views])
    if not shape:
        return [1], [[0] for _ in views]
    return shape, strides


def gemv_wide_config(arch_gen, dt, M, N, K, mat_ld, vec_ld, mat_offset, vec_offset, mat_bstride, vec_bstride):
    if arch_gen < 15:
        return None
    aligned = (mat_offset % 8 == 0 and vec_offset % 8 == 0 and mat_ld % 4 == 0 and vec_ld % 4 == 0
               and all(s % 4 == 0 for s in mat_bstride) and all(s % 4 == 0 for s in vec_bstride))
    if M <= 1 or N <= 1 or K % 4 != 0 or dt not in ("f16", "bf16") or not aligned:
        return None
    passes = (M + 4) // 5
    if passes > 3:
        return None
    vocab_wide = N >= 65536
    full_simd = passes == 1 or N <= 64
    return dict(vecs_per_tg=ceildiv(M, passes), k_lanes=32 if full_simd else 16,
                grid_x=1 if vocab_wide else passes)


def plan_matmul(dt, a, b, c=None, alpha=1.0, beta=0.0, arch_gen=14):
    """What Matmul::eval_gpu (c is None) or AddMM::eval_gpu does with these operands, as far as the gemv routes go:
    a dict with the kernel name, grid, threadgroup, arguments (by Metal buffer index, views for arrays), constants.
    `out` is the row-contiguous result of shape batch + (M, N)."""
    M, N, K = a.shape[-2], b.shape[-1], a.shape[-1]
    ta = check_transpose(a, M == 1)
    tb = check_transpose(b, N == 1)
    assert ta is not None and tb is not None, "these operands would be copied first"
    (a_transposed, lda), (b_transposed, ldb) = ta, tb
    views = (a, b) if c is None else (a, b, c)
    batch_shape, bstrides = collapse_batches(*views)
    A_bs, B_bs = bstrides[0], bstrides[1]
    C_bs = bstrides[2] if c is not None else None
    out_batch = a.shape[:-2]
    batch_size_out = int(np.prod(out_batch)) if out_batch else 1
    fold = (batch_size_out > 1 and not a_transposed and len(batch_shape) == 1 and a.strides[-2] == K
            and A_bs[-1] == M * K and B_bs[-1] == 0)
    if c is not None:
        fold = fold and C_bs[-1] == M * c.strides[-2]
    if fold:  # "Collapse batches into M"
        M *= batch_shape[-1]
        batch_size_out = 1
        A_bs, B_bs, batch_shape = [0], [0], [1]
        if c is not None:
            C_bs = [0]
    assert not (M == 1 and N == 1 and batch_size_out == 1), "M == N == 1 is dot.metal's dot_product"

    if not a_transposed and b_transposed:
        wide = gemv_wide_config(arch_gen, dt, M, N, K, ldb, lda, b.offset, a.offset, B_bs, A_bs)
        if wide:
            has_batch = len(batch_shape) != 1
            do_axpby = c is not None
            name = f"gemv_wide_{tname(dt)}_nv{wide['vecs_per_tg']}_kl{wide['k_lanes']}"
            args = {0: b, 1: a, 3: "out", 4: i32(K), 5: i32(N), 6: i32(M), 7: i32(ldb), 8: i32(lda),
                    11: i32(len(batch_shape)), 12: vec(batch_shape, np.int32), 13: vec(A_bs, np.int64),
                    14: vec(B_bs, np.int64)}
            if do_axpby:
                args.update({2: c, 9: f32(alpha), 10: f32(beta), 15: vec(C_bs, np.int64),
                             16: i32(c.strides[-2]), 17: i32(c.strides[-1])})
            return dict(name=name, groups=(wide["grid_x"], ceildiv(N, 4), batch_size_out),
                        threadgroup=(32, wide["k_lanes"] // 8, 1), args=args,
                        constants={0: has_batch, 1: do_axpby}, M=M, N=N, K=K)

    assert min(M, N) == 1, "not a gemv: steel GEMM"
    # gemv_axbpy
    is_b_matrix = N != 1
    mat, vecv = (b, a) if is_b_matrix else (a, b)
    transpose_mat = (not b_transposed) if is_b_matrix else a_transposed
    in_len, out_len = K, (N if is_b_matrix else M)
    mat_ld = ldb if is_b_matrix else lda
    bs_mat, bs_vec = (B_bs, A_bs) if is_b_matrix else (A_bs, B_bs)
    contiguous_kernel = len(batch_shape) == 1
    tm, tn, sm, sn, bm, bn = 4, 4, 1, 32, 1, 1
    if transpose_mat:
        sm, sn = (4, 8) if (in_len >= 8192 and out_len >= 2048) else (8, 4)
        bn = 16 if out_len >= 2048 else (4 if out_len >= 512 else 2)
        tn = 1 if out_len < tn else tn
        n_out_per_tgp = bn * sn * tn
        kname = f"gemv_t_{tname(dt)}"
    else:
        bm = 8 if out_len >= 4096 else 4
        sn = 32
        if K <= 64:
            bm, sm, sn = 1, 8, 4
        elif K >= 16 * out_len:
            bm, bn = 1, 8
        tm = 1 if out_len < tm else tm
        n_out_per_tgp = bm * sm * tm
        kname = f"gemv_{tname(dt)}"
    do_axpby = c is not None and (alpha != 1.0 or beta != 0.0)
    kname += (f"_bm{bm}_bn{bn}_sm{sm}_sn{sn}_tm{tm}_tn{tn}_nc{int(not contiguous_kernel)}"
              f"_axpby{int(do_axpby)}")
    args = {0: mat, 1: vecv, 3: "out", 4: i32(in_len), 5: i32(out_len), 6: i32(mat_ld),
            9: i32(len(batch_shape)), 10: vec(batch_shape, np.int32), 11: vec(bs_vec, np.int64),
            12: vec(bs_mat, np.int64)}
    if do_axpby:
        args.update({2: c, 7: f32(alpha), 8: f32(beta), 13: vec(C_bs, np.int64), 14: i32(c.strides[-1])})
    return dict(name=kname, groups=(ceildiv(out_len, n_out_per_tgp), 1, batch_size_out), threadgroup=(32, bn, bm),
                args=args, constants=None, M=M, N=N, K=K)


# ---------------------------------------------------------------------------------------------------------------

def acc_tol(dt, K):
    """f32: the kernels accumulate K products in float; the rounding error of a K-term sum relative to its size grows
    like sqrt(K) ulps, so the f32 tolerance widens with sqrt(K) (1e-5 up to K ~ 1000). f16/bf16: the output rounding
    (one half-ulp) dominates, the dtype's default."""
    base = DTYPES[dt][2]
    return base + (3e-7 * math.sqrt(K) if dt == "f32" else 0.0)


def matmul_case(variant, dt, a, b, c=None, alpha=1.0, beta=0.0, arch_gen=14, tol=None, note=""):
    p = plan_matmul(dt, a, b, c, alpha, beta, arch_gen)
    out_shape = list(a.shape[:-2]) + [a.shape[-2], b.shape[-1]]
    shape_s = "x".join(map(str, out_shape)) + f"_k{a.shape[-1]}"

    def run(ctx):
        bufs = {}

        def upload(view, key):
            buf, base = ctx.rand(view.base_size, dt)
            bufs[key] = (view, buf, base)
            return strided_view(base, view.shape, view.strides, view.offset)

        av = upload(a, "a")
        bv = upload(b, "b")
        want = np.matmul(av, bv)
        if c is not None:
            cv = upload(c, "c")
            want = alpha * want + beta * cv
        nout = int(np.prod(out_shape))
        out = ctx.empty(nout * itemsize(dt))
        by_view = {id(v): (buf, v) for v, buf, _ in bufs.values()}
        args = {}
        for idx, arg in p["args"].items():
            if isinstance(arg, str):
                args[idx] = out
            elif isinstance(arg, View):
                buf, v = by_view[id(arg)]
                args[idx] = (buf, v.offset * itemsize(dt))
            else:
                args[idx] = arg
        ctx.launch(p["name"], args, groups=p["groups"], threadgroup=p["threadgroup"], constants=p["constants"])
        got = ctx.read(out, dt, nout)
        t = tol if tol is not None else acc_tol(dt, a.shape[-1])
        if c is not None and dt != "f32" and tol is None and not p["name"].startswith("gemv_wide"):
            # gemv/gemv_t's axpby is done in the storage type: alpha * T(result) + beta * c rounds three times (the
            # product, the bias term, the sum) where the reference rounds once: 3x the dtype's tolerance.
            t = 3 * t
        ctx.check("out", got, want.reshape(-1), tol=t)

    return Case(f"gemv.{variant}.{dt}.{shape_s}", "gemv", FILE, [p["name"]], run, note or p["name"])


# ---------------------------------------------------------------------------------------------------------------
# block_masked_mm's gemv route (BlockMaskedMM::eval_gpu, gemv_masked.metal)

MASK_FILE = "gemv_masked.metal"


def plan_masked(dt, a, b, block_size, out_mask=None, op_masks=None, mask_dt="bool"):
    """BlockMaskedMM::eval_gpu with min(M, N) == 1. Masks are row-contiguous Views of block counts
    (ceil(M/bs), ceil(N/bs)) (out) and (ceil(M/bs), ceil(K/bs)), (ceil(K/bs), ceil(N/bs)) (lhs, rhs), with the
    batch dims of the output in front; mask_dt is "bool" or the output dtype (multiplicative masks)."""
    M, N, K = a.shape[-2], b.shape[-1], a.shape[-1]
    ta, tb = check_transpose(a, M == 1), check_transpose(b, N == 1)
    assert ta is not None and tb is not None
    (transpose_a, lda), (transpose_b, ldb) = ta, tb
    has_out, has_op = out_mask is not None, op_masks is not None
    mname = "bool_" if mask_dt == "bool" else tname(mask_dt)
    out_nm = mname if has_out else "nomask"
    op_nm = mname if has_op else "nomask"
    out_ndim = a.ndim
    if out_ndim > 2:
        batch_shape = list(a.shape[:-2])
        A_bs, B_bs = a.strides[:-2], b.strides[:-2]
        out_bs = out_mask.strides[:-2] if has_out else [0]
        lhs_bs = op_masks[0].strides[:-2] if has_op else [0]
        rhs_bs = op_masks[1].strides[:-2] if has_op else [0]
    else:
        batch_shape, A_bs, B_bs, out_bs, lhs_bs, rhs_bs = [1], [0], [0], [0], [0], [0]
    batch_size_out = int(np.prod(a.shape[:-2])) if out_ndim > 2 else 1
    assert min(M, N) == 1, "not a gemv: steel masked GEMM"
    is_b_matrix = N != 1
    mat, vecv = (b, a) if is_b_matrix else (a, b)
    transpose_mat = (not transpose_b) if is_b_matrix else transpose_a
    out_len = N if is_b_matrix else M
    mat_ld = ldb if is_b_matrix else lda
    bs_mat, bs_vec = (B_bs, A_bs) if is_b_matrix else (A_bs, B_bs)
    contiguous_kernel = len(batch_shape) == 1
    tm, tn, sm, sn, bm, bn = 4, 4, 1, 32, 1, 1
    if transpose_mat:
        sm, sn, bm = 8, 4, 1
        bn = 4 if (block_size == 64 and out_len >= 2048) else 2
        tm = 4 if block_size == 32 else 8
        tn = 1 if out_len < 4 else 4
        n_out = bn * sn * tn
        kname = "gemv_t"
    else:
        if block_size == 32:
            sm, sn, bm = 4, 8, 2
        else:
            sm, sn, bm = 2, 16, (4 if out_len >= 512 else 2)
        tm = 1 if out_len < tm else tm
        n_out = bm * sm * tm
        kname = "gemv"
    kname += (f"_outmask_{out_nm}_opmask_{op_nm}_{tname(dt)}_bm{bm}_bn{bn}_sm{sm}_sn{sn}_tm{tm}_tn{tn}"
              f"_nc{int(not contiguous_kernel)}")
    out_shape_last2 = (M, N)
    mask_strides, mask_bstrides = [], []
    args = {0: mat, 1: vecv, 3: "out", 4: i32(K), 5: i32(out_len), 6: i32(mat_ld), 9: i32(len(batch_shape)),
            10: vec(batch_shape, np.int32), 11: vec(bs_vec, np.int64), 12: vec(bs_mat, np.int64)}
    if has_out:
        om = out_mask
        if transpose_mat:
            o = out_shape_last2[0] == 1
        else:
            o = out_shape_last2[1] == 1
        mask_strides += [om.strides[-1 if o else -2], om.strides[-2 if o else -1]]
        mask_bstrides += list(out_bs)
        args[20] = om
    if has_op:
        lhs, rhs = op_masks
        mm, vm = (rhs, lhs) if is_b_matrix else (lhs, rhs)
        if transpose_mat:
            mask_strides += [mm.strides[-2 if not is_b_matrix else -1], mm.strides[-1 if not is_b_matrix else -2]]
        else:
            mask_strides += [mm.strides[-2 if is_b_matrix else -1], mm.strides[-1 if is_b_matrix else -2]]
        mask_bstrides += list(rhs_bs if is_b_matrix else lhs_bs)
        args[21] = mm
        if transpose_mat:
            v1 = vecv.shape[-2] == 1
        else:
            v1 = vecv.shape[-1] == 1
        mask_strides += [vm.strides[-1 if v1 else -2], vm.strides[-2 if v1 else -1]]
        mask_bstrides += list(lhs_bs if is_b_matrix else rhs_bs)
        args[22] = vm
    args[23] = vec(mask_strides, np.int32)
    args[24] = vec(mask_bstrides, np.int64)
    return dict(name=kname, groups=(ceildiv(out_len, n_out), 1, batch_size_out), threadgroup=(32, bn, bm),
                args=args)


def expand_blocks(mask, bs, rows, cols):
    """A block mask (..., rb, cb) -> the element mask (..., rows, cols)."""
    e = np.repeat(np.repeat(mask, bs, axis=-2), bs, axis=-1)
    return e[..., :rows, :cols]


def masked_case(variant, dt, a, b, bs, out_mask=False, op_mask=False, mask_dt="bool"):
    M, N, K = a.shape[-2], b.shape[-1], a.shape[-1]
    batch = list(a.shape[:-2])
    nb = lambda n: ceildiv(n, bs)
    om = View(batch + [nb(M), nb(N)]) if out_mask else None
    ops = (View(batch + [nb(M), nb(K)]), View(batch + [nb(K), nb(N)])) if op_mask else None
    p = plan_masked(dt, a, b, bs, om, ops, mask_dt)
    out_shape = batch + [M, N]
    shape_s = "x".join(map(str, out_shape)) + f"_k{K}"
    mk = ("out" if out_mask else "") + ("op" if op_mask else "")

    def run(ctx):
        bufs = {}

        def upload_rand(view):
            buf, base = ctx.rand(view.base_size, dt)
            bufs[id(view)] = (buf, itemsize(dt))
            return strided_view(base, view.shape, view.strides, view.offset)

        def upload_mask(view):
            if mask_dt == "bool":
                vals = ctx.rng.integers(0, 2, size=view.shape).astype(np.bool_)
                vals.reshape(-1)[0] = True  # at least one live block
                buf, size = ctx.buffer(vals), 1
                v = vals.astype(np.float64)
            else:  # multiplicative masks: scales, some exactly 0 (a skipped block)
                vals = ctx.rng.choice([0.0, 0.5, 1.0, 1.5, -2.0], size=view.shape)
                (buf, v), size = ctx.upload(vals, mask_dt), itemsize(mask_dt)
            bufs[id(view)] = (buf, size)
            return v

        av = upload_rand(a)
        bv = upload_rand(b)
        if op_mask:
            lhs = expand_blocks(upload_mask(ops[0]), bs, M, K)
            rhs = expand_blocks(upload_mask(ops[1]), bs, K, N)
            want = np.matmul(av * lhs, bv * rhs)
        else:
            want = np.matmul(av, bv)
        if out_mask:
            want = want * expand_blocks(upload_mask(om), bs, M, N)
        nout = int(np.prod(out_shape))
        out = ctx.empty(nout * itemsize(dt))
        args = {}
        for idx, arg in p["args"].items():
            if isinstance(arg, str):
                args[idx] = out
            elif isinstance(arg, View):
                buf, size = bufs[id(arg)]
                args[idx] = (buf, arg.offset * size)
            else:
                args[idx] = arg
        ctx.launch(p["name"], args, groups=p["groups"], threadgroup=p["threadgroup"])
        got = ctx.read(out, dt, nout)
        ctx.check("out", got, want.reshape(-1), tol=acc_tol(dt, K))

    return Case(f"gemv.masked_{variant}_{mk}_{mask_dt}.bs{bs}.{dt}.{shape_s}", "gemv", MASK_FILE, [p["name"]], run,
                p["name"])


# ---------------------------------------------------------------------------------------------------------------
# gather_mm's vector routes (GatherMM::eval_gpu -> gather_mv: gemv_gather_* / gemv_t_gather_*)

def plan_gather_mv(dt, a, b, idx_shape):
    """GatherMM with M == 1 (gather_mv(b, a, rhs, lhs, ..., is_mv=false)) or N == 1 (gather_mv(a, b, lhs, rhs, ...,
    is_mv=true)); the indices are row-contiguous int arrays of idx_shape (already broadcast to each other), right
    indices not sorted. The output is idx_shape + (M, N)."""
    M, N, K = a.shape[-2], b.shape[-1], a.shape[-1]
    assert M == 1 or N == 1, "not a gather gemv"
    if M == 1:
        mat, vecv, is_mv, out_len, mat_idx, vec_idx = b, a, False, N, "rhs", "lhs"
    else:
        mat, vecv, is_mv, out_len, mat_idx, vec_idx = a, b, True, M, "lhs", "rhs"
    tm_ = check_transpose(mat, out_len == 1)
    tv_ = check_transpose(vecv, True)
    assert tm_ is not None and tv_ is not None
    transpose_mat, mat_cols = tm_
    transpose_mat = (not is_mv) ^ transpose_mat
    out_shape = list(idx_shape) + [M, N]
    batch_size_out = int(np.prod(out_shape)) // out_len
    idx_strides = row_strides(idx_shape)
    tm, tn, sm, sn, bm, bn = 4, 4, 1, 32, 1, 1
    if transpose_mat:
        sm, sn = (4, 8) if (K >= 8192 and out_len >= 2048) else (8, 4)
        bn = 16 if out_len >= 2048 else (4 if out_len >= 512 else 2)
        tn = 1 if out_len < tn else tn
        n_out = bn * sn * tn
        kname = f"gemv_t_gather_{tname(dt)}"
    else:
        bm = 8 if out_len >= 4096 else 4
        tm = 1 if out_len < tm else tm
        n_out = bm * sm * tm
        kname = f"gemv_gather_{tname(dt)}"
    kname += f"_bm{bm}_bn{bn}_sm{sm}_sn{sn}_tm{tm}_tn{tn}"
    args = {0: mat, 1: vecv, 3: "out", 4: i32(K), 5: i32(out_len), 6: i32(mat_cols),
            9: i32(len(out_shape) - 2), 10: vec(out_shape, np.int32), 11: vec(idx_strides + idx_strides, np.int64),
            12: i32(vecv.ndim - 2), 13: vec(vecv.shape, np.int32), 14: vec(vecv.strides, np.int64),
            15: i32(mat.ndim - 2), 16: vec(mat.shape, np.int32), 17: vec(mat.strides, np.int64),
            18: vec_idx, 19: mat_idx}
    return dict(name=kname, groups=(ceildiv(out_len, n_out), 1, batch_size_out), threadgroup=(32, bn, bm),
                args=args, out_shape=out_shape)


def gather_case(variant, dt, a, b, idx_shape):
    p = plan_gather_mv(dt, a, b, idx_shape)
    shape_s = "x".join(map(str, p["out_shape"])) + f"_k{a.shape[-1]}"

    def run(ctx):
        bufs = {}
        vals = {}
        for key, v in (("a", a), ("b", b)):
            buf, base = ctx.rand(v.base_size, dt)
            bufs[id(v)] = (buf, v)
            vals[key] = strided_view(base, v.shape, v.strides, v.offset)
        # the indices pick a's and b's batch entries (over all their batch dims, flattened)
        na, nb = int(np.prod(a.shape[:-2])), int(np.prod(b.shape[:-2]))
        lhs = ctx.rng.integers(0, na, size=idx_shape).astype(np.uint32)
        rhs = ctx.rng.integers(0, nb, size=idx_shape).astype(np.uint32)
        ibuf = {"lhs": ctx.buffer(lhs), "rhs": ctx.buffer(rhs)}
        A = vals["a"].reshape((na,) + tuple(a.shape[-2:]))
        B = vals["b"].reshape((nb,) + tuple(b.shape[-2:]))
        want = np.matmul(A[lhs.reshape(-1)], B[rhs.reshape(-1)])
        nout = int(np.prod(p["out_shape"]))
        out = ctx.empty(nout * itemsize(dt))
        args = {}
        for idx, arg in p["args"].items():
            if isinstance(arg, str):
                args[idx] = out if arg == "out" else ibuf[arg]
            elif isinstance(arg, View):
                buf, v = bufs[id(arg)]
                args[idx] = (buf, v.offset * itemsize(dt))
            else:
                args[idx] = arg
        ctx.launch(p["name"], args, groups=p["groups"], threadgroup=p["threadgroup"])
        ctx.check("out", ctx.read(out, dt, nout), want.reshape(-1), tol=acc_tol(dt, a.shape[-1]))

    return Case(f"gemv.gather_{variant}.{dt}.{shape_s}", "gemv", FILE, [p["name"]], run, p["name"])


def cases():
    # --- plain gemv: a (M, K) row-major @ b (K, 1): the matrix is a, row-major along K -> gemv_*
    # M = 129 (not a multiple of bm*sm*tm = 16: the last simdgroup shifts back), K = 257 (a leftover past the
    # 128-wide blocks)
    for dt in ("f32", "f16", "bf16"):
        yield matmul_case("mv", dt, View((129, 257)), View((257, 1)))
    # K <= 64: bm1 sm8 sn4 (8 rows of 4 threads per simdgroup)
    yield matmul_case("mv_smallk", "f32", View((70, 40)), View((40, 1)))
    # K >= 16 * M and M < 4: bm1 bn8 tm1 (8 simdgroups split K, threadgroup-memory reduction)
    yield matmul_case("mv_longk", "f16", View((3, 1000)), View((1000, 1)))
    # M >= 4096: bm8
    yield matmul_case("mv_bm8", "bf16", View((4100, 200)), View((200, 1)))
    # --- M == 1, b (K, N) row-major: the matrix b is column-major along K -> gemv_t_*
    yield matmul_case("vm", "f32", View((1, 300)), View((300, 1000)))        # N >= 512: bn4
    yield matmul_case("vm", "f16", View((1, 77)), View((77, 130)))            # bn2, K < one 32-row block
    yield matmul_case("vm", "bf16", View((1, 515)), View((515, 2051)))        # N >= 2048: bn16
    yield matmul_case("vm_tn1", "f32", View((1, 500)), View((500, 3)))       # N < 4: tn1
    # K >= 8192 and N >= 2048: sm4 sn8 bn16
    yield matmul_case("vm_wide", "f16", View((1, 8200)), View((8200, 2049)))
    # --- b = B.T with B (N, K) row-major: transposed b, the matrix row-major along K -> gemv_*
    yield matmul_case("vmT", "f32", View((1, 333)), permuted((45, 333), (1, 0)))
    # --- a = A.T with A (K, M) row-major, b (K, 1): transposed a -> gemv_t_*
    yield matmul_case("mTv", "f16", permuted((260, 600), (1, 0)), View((260, 1)))
    # --- views MLX passes without a copy: a column slice (leading dim > K) at an offset into its buffer
    yield matmul_case("mv_lda", "f32", View((64, 100), (130, 1), offset=7), View((100, 1)))
    yield matmul_case("vm_ldb", "f16", View((1, 90), offset=3), View((90, 200), (230, 1), offset=5))
    # --- batched: batch (3,), one batch dim -> _nc0 with the batch strides
    yield matmul_case("mv_batch", "f32", View((3, 33, 77)), View((3, 77, 1)))
    yield matmul_case("vm_batch", "bf16", View((4, 1, 90)), View((4, 90, 70)))
    # a batch that does not collapse (a's batch dims permuted) -> _nc1, elem_to_loc over 2 batch dims
    yield matmul_case("mv_batch_nc", "f16", permuted((3, 2, 20, 50), (1, 0, 2, 3)), View((2, 3, 50, 1)))
    yield matmul_case("vm_batch_nc", "f32", View((2, 3, 1, 64)), permuted((3, 2, 64, 40), (1, 0, 2, 3)))
    # the vector broadcast over the batch (stride 0), the matrix batched
    yield matmul_case("vm_bcast_vec", "f32", broadcast((5, 1, 100), (1, 100)), View((5, 100, 36)))
    # b broadcast over a's batch (stride 0): MLX folds the batch into M (one gemv of 4 * 10 rows)
    yield matmul_case("mv_fold", "f16", View((4, 10, 100)), broadcast((4, 100, 1), (100, 1)))
    # --- addmm: alpha * (a @ b) + beta * c -> _axpby1; c broadcast along the output vector (bias_stride 1)
    yield matmul_case("addmm_vm", "f16", View((1, 200)), View((200, 300)), broadcast((1, 300), (300,)),
                      alpha=0.5, beta=2.0)
    yield matmul_case("addmm_mv", "f32", View((97, 150)), View((150, 1)), View((97, 1)), alpha=-1.5, beta=0.25)
    yield matmul_case("addmm_mv_batch", "bf16", View((2, 40, 70)), View((2, 70, 1)), View((2, 40, 1)),
                      alpha=2.0, beta=-1.0)
    # c broadcast to every output (stride 0: bias_stride 0)
    yield matmul_case("addmm_vm_scalar_c", "f32", View((1, 64)), View((64, 96)), broadcast((1, 96), (1,)),
                      alpha=1.0, beta=3.0)
    # --- gemv_wide (an M3 or later): a (M, K) row-major @ B.T, f16/bf16, K % 4 == 0
    yield matmul_case("wide", "f16", View((7, 256)), permuted((100, 256), (1, 0)), arch_gen=15)   # nv4 kl16
    yield matmul_case("wide", "bf16", View((3, 1000)), permuted((50, 1000), (1, 0)), arch_gen=15)  # nv3 kl32
    yield matmul_case("wide_batch", "f16", View((2, 5, 128)), permuted((2, 70, 128), (0, 2, 1)), arch_gen=15)
    yield matmul_case("wide_addmm", "bf16", View((4, 96)), permuted((33, 96), (1, 0)), View((4, 33)),
                      alpha=0.75, beta=-0.5, arch_gen=15)
    # --- block_masked_mm, gemv route (gemv_masked.metal). M (mv) or N (vm) a multiple of 4: with a tail of 1-3
    # rows the last simdgroup shifts back into the previous mask block and reads that block's mask under this
    # one's index (MLX's kernels assume it away), so those shapes have no single right answer.
    yield masked_case("mv", "f32", View((96, 100)), View((100, 1)), 32, out_mask=True, op_mask=True)
    yield masked_case("vm", "f16", View((1, 200)), View((200, 256)), 64, out_mask=True, op_mask=True,
                      mask_dt="f16")
    yield masked_case("mv", "bf16", View((520, 130)), View((130, 1)), 64, out_mask=True)       # bm4
    yield masked_case("vm", "f32", View((1, 70)), View((70, 64)), 32, op_mask=True, mask_dt="f32")
    yield masked_case("mv_batch", "f16", View((2, 64, 96)), View((2, 96, 1)), 32, out_mask=True, op_mask=True)
    # --- gather_mm with a vector side (gemv_gather / gemv_t_gather): experts picked by index per batch entry
    yield gather_case("mv", "f32", View((4, 50, 70)), View((3, 70, 1)), (5,))            # N == 1: gemv_gather
    yield gather_case("vm", "f16", View((3, 1, 64)), View((4, 64, 100)), (6,))           # M == 1: gemv_t_gather
    yield gather_case("vmT", "bf16", View((2, 1, 96)), permuted((5, 40, 96), (0, 2, 1)), (3,))  # experts W.T
    yield gather_case("vm_2d_idx", "f32", View((2, 3, 1, 33)), View((4, 33, 20)), (2, 3))  # 2-D indices
