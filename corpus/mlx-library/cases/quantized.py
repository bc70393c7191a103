"""Quantized matmuls (quantized.metal: affine; fp_quantized.metal: mxfp4, nvfp4, mxfp8), launched as
mlx/backend/metal/quantized.cpp's QuantizedMatmul::eval_gpu launches them.

y = x @ dequantize(w).T (transpose, w is (N, K) quantized along K) or x @ dequantize(w) (w is (K, N) quantized along
N). The host code picks, with M the number of vectors (all rows of x when w is 2-D and x row-contiguous):
- M >= the vector limit (transpose: get_qmv_batch_limit(K, N) by GPU generation; else 4): qmm_t / qmm_n (steel tiles
  of 32x32); a non-batched qmm_t goes through qmm_splitk: qmm_t_splitk into a (split_k, M, N) intermediate, then
  reduce.metal's col_reduce_small sums it (falling back to qmm_t when no split_k > 1 divides K into whole 32-wide,
  whole-group partitions);
- transpose, small M: qmv_quad (K == 64 or 128), qmv_wide (M >= 2, fp modes always, affine on generation >= 15),
  qmv_fast (N % 8 == 0 and K a multiple of the 32-lane block), qmv;
- no transpose, small M: qvm (K < 1024), else qvm_split_k (8 partitions up to K = 8192) and the same sum.
`_batch_1` kernels when the output has more than one M x N matrix (w with batch dims, or x not row-contiguous), with
the shapes and strides of x, w, scales, biases as setBytes vectors.
Also GatherQMM (gather_qmv(_fast), gather_qvm, gather_qmm_t/n: x[lhs[i]] against w[rhs[i]], unsorted indices) and
fast::Quantize (affine_quantize, affine/fp dequantize: the dequantize kernels need no simdgroup functions).
On a NAX device (generation >= 17, Dev.nax), qmm() takes qmm_t_nax (transpose, K % 64 == 0: 64x64 tiles, bm 32 when
M <= 32; quantized_nax.metal / fp_quantized_nax.metal), gather_qmm takes gather_qmm_t_nax, and sorted right indices
without left ones (M == 1, B >= 16, B / experts >= 4) take gather_qmm_rhs_nax (function constants 200-202); the
cases of those routes are cases/nax.py's family quantized_nax.
Not covered: gather_qmm_rhs without NAX, QQMatmul, global scales (`_hgs`), split_k 32 (K > 8192, whose sum takes
col_reduce_looped).

The device model: these cases are an M2 (generation 14, base size: vector limit 14/10/6, no NAX) unless the case says
M3 (generation 15), which sends affine M >= 2 to qmv_wide, or M5Max (generation 17, size 's'), whose nvfp4 qmv_fast
with N >= 4096 uses the 2-rows-per-simdgroup `_r_2` kernels.

Quantization is done here in numpy (cases/_quantized_util.py), and the reference is x @ dequantize(w) in float64 from
the codes, scales and biases as stored.
"""
import math

import numpy as np

from _quantized_util import (FP_MODES, affine_dequantize, affine_quantize, fp_dequantize, fp_quantize, pack_rows,
                             unpack_rows)
from mlxhost import ceildiv, collapse_contiguous_dims, row_strides, strided_view
from mlxrun import DTYPES, Case, i32, itemsize, rounded, vec

FILES = {"affine": "quantized.metal", "fp": "fp_quantized.metal"}
NAX_FILES = {"affine": "quantized_nax.metal", "fp": "fp_quantized_nax.metal"}  # the NAX (Metal 4 tensor) kernels
TYPE_STRING = {"f32": "float", "f16": "float16_t", "bf16": "bfloat16_t"}  # get_type_string


class Dev:
    def __init__(self, gen=14, size="g", name="M2"):
        self.gen, self.size, self.name = gen, size, name

    @property
    def nax(self):
        """metal::is_nax_available(): generation 17 and later (18 for the 'p' class), macOS 26.2 or later assumed."""
        return self.gen >= (18 if self.size == "p" else 17)


M2 = Dev(14, "g", "M2")
M3 = Dev(15, "g", "M3")
M5MAX = Dev(17, "s", "M5Max")


def qmv_batch_limit(D, O, dev):
    g, s = dev.gen, dev.size
    if g >= 17 and s != "d":
        return 33 if (D <= 2048 and O <= 2048) else (25 if (D <= 4096 and O <= 4096) else 13)
    if g >= 15 and s != "d":
        return 13 if (D <= 2048 and O <= 2048) else (15 if (D <= 4096 and O <= 4096) else 13)
    if s == "d":
        return 32 if (D <= 2048 and O <= 2048) else (18 if (D <= 4096 and O <= 4096) else 12)
    if g >= 13:
        return 14 if (D <= 2048 and O <= 2048) else (10 if (D <= 4096 and O <= 4096) else 6)
    return 18 if (D <= 2048 and O <= 2048) else (12 if (D <= 4096 and O <= 4096) else 10)


def host_pack_factor(bits, wsize=8):
    return 8 if bits in (3, 5) else (4 if bits == 6 else wsize // bits)


def qmv_fast_k_alignment(bits):
    return host_pack_factor(bits, 32) * (1 if bits == 2 else 2) * 32


class Q:
    """One quantized_matmul problem: x (shape, strides), w's batch shape, N, K, transpose, mode, group size, bits."""

    def __init__(self, mode, dt, x_shape, N, transpose=True, gs=64, bits=4, w_batch=(), x_strides=None, dev=M2,
                 idx_shape=None, x_offset=0, sorted_rhs=False):
        self.mode, self.dt, self.transpose, self.dev = mode, dt, transpose, dev
        # gather_qmm with sorted right indices and no left ones (lhs implied: x's rows in order)
        self.sorted_rhs = sorted_rhs
        self.x_offset = x_offset  # elements into x's buffer (a slice MLX passes without a copy)
        self.idx_shape = list(idx_shape) if idx_shape is not None else None  # gather_qmm's index shape
        if mode != "affine":
            gs, bits = FP_MODES[mode][0], FP_MODES[mode][1]
        self.gs, self.bits = gs, bits
        self.x_shape = list(x_shape)
        self.x_strides = list(x_strides) if x_strides is not None else row_strides(x_shape)
        self.K, self.N = self.x_shape[-1], N
        self.w_batch = list(w_batch)
        rows, cols = (N, self.K) if transpose else (self.K, N)
        self.w_logical = self.w_batch + [rows, cols]
        self.w_shape = self.w_batch + [rows, cols * bits // 32]
        self.s_shape = self.w_batch + [rows, cols // gs]
        ob = (np.broadcast_shapes(tuple(self.x_shape[:-2]), tuple(self.w_batch)) if self.idx_shape is None
              else ())
        self.out_shape = list(ob) + [self.x_shape[-2] if len(self.x_shape) > 1 else 1, N]
        if len(self.x_shape) == 1:
            self.out_shape = [N]
        if self.idx_shape is not None:
            self.out_shape = self.idx_shape + [self.x_shape[-2], N]

    @property
    def x_row_contiguous(self):
        return self.x_strides == row_strides(self.x_shape)


def plan(q):
    """QuantizedMatmul::eval_gpu's choice: kernel name, grid, threadgroup and the arguments by buffer index
    ('w', 's', 'b', 'x', 'y' for arrays)."""
    mode, dt, gs, bits, K, N = q.mode, q.dt, q.gs, q.bits, q.K, q.N
    affine = mode == "affine"
    ts = TYPE_STRING[dt]
    non_batched = len(q.w_shape) == 2 and q.x_row_contiguous
    M = int(np.prod(q.x_shape)) // K if non_batched else q.x_shape[-2]
    out_size = int(np.prod(q.out_shape))
    B = out_size // M // N
    vector_limit = qmv_batch_limit(K, N, q.dev) if q.transpose else 4

    def strides_and_shapes(start, skip):
        if skip:
            return {}
        a = {start: i32(len(q.x_shape) - 2), start + 1: vec(q.x_shape, np.int32),
             start + 2: vec(q.x_strides, np.int64), start + 3: i32(len(q.w_shape) - 2),
             start + 4: vec(q.w_shape, np.int32), start + 5: vec(row_strides(q.w_shape), np.int64),
             start + 6: vec(row_strides(q.s_shape), np.int64)}
        if affine:
            a[start + 7] = vec(row_strides(q.s_shape), np.int64)
        return a

    def inputs(with_gs_slot):
        """w, scales, biases (affine), then x at the next slot (fp qmv/qvm keep slot 2 for the global scale)."""
        a = {0: "w", 1: "s"}
        if affine:
            a[2] = "b"
        c = 3 if (affine or with_gs_slot) else 2
        return a, c

    if q.idx_shape is not None:
        return plan_gather(q, strides_and_shapes, inputs)

    if M >= vector_limit:
        if q.transpose and B == 1:  # qmm_splitk: split_k to target ~512 threadgroups
            tiles = ceildiv(N, 32) * ceildiv(M, 32)
            split_k = max(1, 512 // tiles)
            k_align = gs if gs > 32 else 32
            split_k = min(split_k, K // k_align)
            while split_k > 1 and K % (split_k * k_align) != 0:
                split_k -= 1
            if split_k > 1:
                name = (f"{mode}_qmm_t_splitk_{ts}_gs_{gs}_b_{bits}"
                        f"_alN_{'true' if N % 32 == 0 else 'false'}")
                a, c = inputs(False)
                a.update({c: "x", c + 1: "tmp", c + 2: i32(K), c + 3: i32(N), c + 4: i32(M),
                          c + 5: i32(K // split_k), c + 6: i32(M * N)})
                return dict(name=name, groups=(ceildiv(N, 32), ceildiv(M, 32), split_k), threadgroup=(32, 2, 2),
                            args=a, M=M, route="qmm_splitk", split_k=split_k,
                            reduce=col_reduce_small_plan(dt, split_k, M * N))
        if q.dev.nax and q.transpose and K % 64 == 0:  # qmm_nax (tf32 on: float32 too)
            bm = 32 if M <= 32 else 64
            name = (f"{mode}_qmm_t_nax_{ts}_gs_{gs}_b_{bits}_bm{bm}_bn64_bk64_wm2_wn2"
                    f"_alN_{'true' if N % 64 == 0 else 'false'}_batch_{int(B > 1)}")
            a, c = inputs(False)
            a.update({c: "x", c + 1: "y", c + 2: i32(K), c + 3: i32(N), c + 4: i32(M)})
            a.update(strides_and_shapes(c + 5, B <= 1))
            return dict(name=name, groups=(ceildiv(N, 64), ceildiv(M, bm), B), threadgroup=(32, 2, 2), args=a, M=M,
                        route="qmm")
        name = (f"{mode}_qmm_{'t' if q.transpose else 'n'}_{ts}_gs_{gs}_b_{bits}"
                + ((f"_alN_{'true' if N % 32 == 0 else 'false'}") if q.transpose else "")
                + f"_batch_{int(B > 1)}")
        a, c = inputs(False)
        a.update({c: "x", c + 1: "y", c + 2: i32(K), c + 3: i32(N), c + 4: i32(M)})
        a.update(strides_and_shapes(c + 5, B <= 1))
        return dict(name=name, groups=(ceildiv(N, 32), ceildiv(M, 32), B), threadgroup=(32, 2, 2), args=a, M=M,
                    route="qmm")

    if q.transpose:
        if K in (64, 128) and (bits & (bits - 1)) == 0:  # qmv_quad
            name = f"{mode}_qmv_quad_{ts}_gs_{gs}_b_{bits}_d_{K}_batch_{int(B > 1)}"
            a, c = inputs(False)
            a.update({c: "x", c + 1: "y", c + 2: i32(K), c + 3: i32(N)})
            a.update(strides_and_shapes(c + 4, B <= 1))
            return dict(name=name, groups=(M, ceildiv(N, 64), B), threadgroup=(32, 1, 1), args=a, M=M, route="quad")
        if M >= 2 and (not affine or q.dev.gen >= 15):  # qmv_wide
            n_tiles = (M + 4) // 5
            vecs = ceildiv(M, n_tiles)
            k_lanes = 8 if affine else 16
            rows_per_tg = (32 // k_lanes) * 2
            name = f"{mode}_qmv_wide_{ts}_gs_{gs}_b_{bits}_nv_{vecs}_kl_{k_lanes}_batch_{int(B > 1)}"
            a, c = inputs(False)
            a.update({c: "x", c + 1: "y", c + 2: i32(K), c + 3: i32(N), c + 4: i32(M)})
            a.update(strides_and_shapes(c + 5, not B > 1))
            return dict(name=name, groups=(ceildiv(M, vecs), ceildiv(N, rows_per_tg), B), threadgroup=(32, 2, 1),
                        args=a, M=M, route="wide")
        fast = N % 8 == 0 and K % qmv_fast_k_alignment(bits) == 0
        # a narrower output tile (2 rows per simdgroup) for large nvfp4 products on an M5 Max
        narrow = fast and N >= 4096 and q.dev.gen == 17 and q.dev.size == "s" and mode == "nvfp4"
        bn = 2 * (2 if narrow else 4)
        name = (f"{mode}_qmv{'_fast' if fast else ''}_{ts}_gs_{gs}_b_{bits}{'_r_2' if narrow else ''}"
                f"_batch_{int(B > 1)}")
        a, c = inputs(True)
        a.update({c: "x", c + 1: "y", c + 2: i32(K), c + 3: i32(N)})
        a.update(strides_and_shapes(c + 4, B <= 1))
        return dict(name=name, groups=(M, ceildiv(N, bn), B), threadgroup=(32, 2, 1), args=a, M=M,
                    route="qmv_fast" if fast else "qmv")

    if K >= 1024:  # qvm_split_k: K cut into split_k partitions (a batch dim of x, w, scales), then a sum
        split_k = 32 if K > 8192 else 8
        split_D = ceildiv(K, split_k)
        assert B == 1, "batched qvm_split_k not covered"
        x_shape, x_strides = list(q.x_shape), list(q.x_strides)
        if len(x_shape) == 1:
            x_shape, x_strides = [1] + x_shape, [0] + x_strides
        x_ndim = len(x_shape)
        x_shape.insert(x_ndim - 2, split_k)
        x_shape[-1] //= split_k
        x_strides.insert(x_ndim - 2, split_D)
        x_strides[x_ndim - 1] = split_D  # MLX overwrites the M stride here; the kernel does not read it
        w_shape, w_strides = list(q.w_shape), row_strides(q.w_shape)
        s_strides = row_strides(q.s_shape)
        w_ndim = len(w_shape)
        w_shape.insert(w_ndim - 2, split_k)
        w_shape[w_ndim - 1] //= split_k
        w_strides.insert(w_ndim - 2, split_D * q.w_shape[-1])
        s_strides.insert(len(s_strides) - 2, split_D * q.s_shape[-1])
        final_block_size = K - (split_k - 1) * split_D
        name = f"{mode}_qvm_split_k_{ts}_gs_{gs}_b_{bits}_spk_{split_k}"
        a, c = inputs(False)
        a.update({c: "x", c + 1: "tmp", c + 2: i32(split_D), c + 3: i32(N), c + 4: i32(x_ndim - 2 + 1),
                  c + 5: vec(x_shape, np.int32), c + 6: vec(x_strides, np.int64), c + 7: i32(w_ndim - 2 + 1),
                  c + 8: vec(w_shape, np.int32), c + 9: vec(w_strides, np.int64), c + 10: vec(s_strides, np.int64)})
        c += 11
        if affine:
            a[c] = vec(s_strides, np.int64)  # the biases have the scales' shape and strides
            c += 1
        a[c] = i32(final_block_size)
        return dict(name=name, groups=(M, ceildiv(N, min(gs, 32) * 2), B * split_k), threadgroup=(32, 2, 1),
                    args=a, M=M, route="qvm_split_k", split_k=split_k, reduce=col_reduce_small_plan(dt, split_k,
                                                                                                     M * N))
    name = f"{mode}_qvm_{ts}_gs_{gs}_b_{bits}_batch_{int(B > 1)}"
    a, c = inputs(True)
    a.update({c: "x", c + 1: "y", c + 2: i32(K), c + 3: i32(N)})
    a.update(strides_and_shapes(c + 4, B <= 1))
    return dict(name=name, groups=(M, ceildiv(N, min(gs, 32) * 2), B), threadgroup=(32, 2, 1), args=a, M=M,
                route="qvm")


def plan_gather(q, strides_and_shapes, inputs):
    """GatherQMM::eval_gpu with unsorted right indices: y[i] = x[lhs[i]] @ dequantize(w[rhs[i]]).T (or without .T),
    the indices over x's and w's batch dims. Routes: gather_qmm_t/n (M >= the vector limit), gather_qmv(_fast),
    gather_qvm; shapes and strides of x, w, scales, biases, then the indices' (collapsed) shape and strides."""
    mode, gs, bits, K, N = q.mode, q.gs, q.bits, q.K, q.N
    ts = TYPE_STRING[q.dt]
    M = q.x_shape[-2]
    B = int(np.prod(q.idx_shape))
    vector_limit = qmv_batch_limit(K, N, q.dev) if q.transpose else 4
    ishape, (lst, rst) = collapse_contiguous_dims(q.idx_shape, row_strides(q.idx_shape), row_strides(q.idx_shape))

    def gather_args(start):
        return {start: i32(len(ishape)), start + 1: vec(ishape, np.int32), start + 2: vec(lst, np.int64),
                start + 3: vec(rst, np.int64)}

    E = int(np.prod(q.w_batch))
    if q.sorted_rhs and M == 1 and B >= 16 and B // E >= 4:  # gather_qmm_rhs: x's rows in order, lhs implied
        assert q.dev.nax and q.transpose, "gather_qmm_rhs without NAX not covered"
        Mx = int(np.prod(q.x_shape)) // K  # the rows of x, broadcast to the indices' shape
        bm = 32 if Mx // E < 64 else 64  # gather_qmm_rhs_nax
        name = (f"{mode}_gather_qmm_rhs_nax_nt_{ts}_gs_{gs}_b_{bits}_bm_{bm}_bn_64_bk_64_wm_2_wn_2")
        a = {0: "x", 1: "w", 2: "s"}
        c = 3
        if mode == "affine":
            a[3] = "b"
            c = 4
        a.update({c: "rhs", c + 1: "y", c + 2: i32(Mx), c + 3: i32(N), c + 4: i32(K)})
        return dict(name=name, groups=(ceildiv(N, 64), ceildiv(Mx, bm), 1), threadgroup=(32, 2, 2), args=a, M=Mx,
                    route="qmm", constants={200: Mx % bm == 0, 201: N % 64 == 0, 202: K % 64 == 0})
    if M >= vector_limit:
        if q.dev.nax and q.transpose and K % 64 == 0:  # gather_qmm_nax: 64x64 tiles
            tile = 64
            name = (f"{mode}_gather_qmm_t_nax_{ts}_gs_{gs}_b_{bits}_bm64_bn64_bk64_wm2_wn2"
                    f"_alN_{'true' if N % 64 == 0 else 'false'}")
        else:
            tile = 32
            name = (f"{mode}_gather_qmm_{'t' if q.transpose else 'n'}_{ts}_gs_{gs}_b_{bits}"
                    + ((f"_alN_{'true' if N % 32 == 0 else 'false'}") if q.transpose else ""))
        a, c = inputs(False)
        a.update({c: "x", c + 1: "lhs", c + 2: "rhs", c + 3: "y", c + 4: i32(K), c + 5: i32(N), c + 6: i32(M)})
        st = strides_and_shapes(c + 7, False)
        a.update(st)
        a.update(gather_args(c + 7 + len(st)))
        return dict(name=name, groups=(ceildiv(N, tile), ceildiv(M, tile), B), threadgroup=(32, 2, 2), args=a, M=M,
                    route="qmm")
    a, c = inputs(True)
    a.update({c: "x", c + 1: "lhs", c + 2: "rhs", c + 3: "y", c + 4: i32(K), c + 5: i32(N)})
    st = strides_and_shapes(c + 6, False)
    a.update(st)
    a.update(gather_args(c + 6 + len(st)))
    if q.transpose:
        fast = N % 8 == 0 and K % qmv_fast_k_alignment(bits) == 0
        name = f"{mode}_gather_qmv{'_fast' if fast else ''}_{ts}_gs_{gs}_b_{bits}"
        return dict(name=name, groups=(M, ceildiv(N, 8), B), threadgroup=(32, 2, 1), args=a, M=M,
                    route="qmv_fast" if fast else "qmv")
    name = f"{mode}_gather_qvm_{ts}_gs_{gs}_b_{bits}"
    return dict(name=name, groups=(M, ceildiv(N, min(gs, 32) * 2), B), threadgroup=(32, 2, 1), args=a, M=M,
                route="qvm")


def col_reduce_small_plan(dt, split_k, stride):
    """strided_reduce_general_dispatch's small-column route for the sum over the split axis of a row-contiguous
    (split_k, M, N) intermediate (reduction_size split_k < 32, reduction_stride M * N, nothing else left)."""
    assert split_k < 32, "split_k >= 32 takes col_reduce_longcolumn/looped: not covered"
    n_reads = 4
    blocks = ceildiv(stride, n_reads)
    tgx = min(blocks, 32)
    tgy = min(8, min(1024 // tgx, split_k))  # 1024: the pipeline's maxTotalThreadsPerThreadgroup
    name = f"col_reduce_small_1_reduce_sum{ {'f32': 'float32', 'f16': 'float16', 'bf16': 'bfloat16'}[dt]}"
    args = {2: np.uint64(split_k), 3: np.int64(stride), 4: vec([0], np.int32), 5: vec([0], np.int64),
            6: i32(0), 7: vec([split_k], np.int32), 8: vec([stride], np.int64), 9: i32(1), 10: np.uint64(1)}
    # the output's dims all have strides < reduction_stride, so get_2d_grid_dims sees no dims: 1 x 1
    return dict(name=name, groups=(ceildiv(blocks, tgx), 1, 1), threadgroup=(tgx, tgy, 1), args=args)


REDUCE_FILE = "reduce.metal"


def acc_tol(dt, K, route):
    """f32: the kernels sum K products in float, so the tolerance widens with sqrt(K) (1e-5 up to K ~ 1000).
    (qmm_t/qmm_n round each dequantized weight to the activation type: the reference does too, see qcase.)"""
    base = DTYPES[dt][2]
    if dt == "f32":
        return base + 3e-7 * math.sqrt(K)
    if route in ("qmm_splitk", "qvm_split_k"):
        # split K: each partition's result is stored in the activation type, and the reduce pass sums them in
        # that type too (sum's accumulator for f16/bf16 is f16/bf16): 2 * split_k - 1 roundings of values up to
        # the largest partial or running sum (the scale the check divides by), where the reference rounds once:
        # twice the dtype's tolerance, relative to that scale.
        return base * 2
    return base


def qcase(variant, q, note="", family="quantized"):
    p = plan(q)
    mode = q.mode
    file = (NAX_FILES if "_nax_" in p["name"] else FILES)["affine" if mode == "affine" else "fp"]
    shape_s = "x".join(map(str, q.out_shape)) + f"_k{q.K}"
    gs_s = f"gs{q.gs}_b{q.bits}" if mode == "affine" else mode
    dev_s = "" if q.dev is M2 else f".{q.dev.name}"
    name = f"{family}.{variant}.{gs_s}{dev_s}.{q.dt}.{shape_s}"

    def run(ctx):
        dt = q.dt
        # the weights: uniform in [-1, 1), quantized per group along the last axis
        w = ctx.rng.uniform(-1.0, 1.0, size=q.w_logical)
        if mode == "affine":
            codes, scales, biases = affine_quantize(w, q.gs, q.bits, lambda v: rounded(v, dt))
            wq = affine_dequantize(codes, scales, biases, q.gs)
            bufs = {"s": ctx.upload(scales, dt)[0], "b": ctx.upload(biases, dt)[0]}
        else:
            codes, scodes = fp_quantize(w, mode)
            wq = fp_dequantize(codes, scodes, mode)
            bufs = {"s": ctx.buffer(scodes.astype(np.uint8))}
        packed = pack_rows(codes, q.bits)
        assert packed.shape == tuple(q.w_shape)
        assert np.array_equal(unpack_rows(packed, q.bits, codes.shape[-1]), codes)
        bufs["w"] = ctx.buffer(packed)
        # x: a flat base seen through (shape, strides)
        base_size = q.x_offset + 1 + sum((d - 1) * s for d, s in zip(q.x_shape, q.x_strides))
        if mode == "affine" and dt != "f32" and p["route"] in ("qmv", "qmv_fast", "quad"):
            # These kernels sum x in runs of 4 (4-bit) in the activation type before multiplying by the group's
            # bias (load_vector's `x[i] + x[i + 1] + ...` on half/bfloat values), which rounds where the
            # reference does not: an error of about ulp * sqrt(K / 4), 8x larger for bfloat16. x is drawn from
            # multiples of 1/64 in [-1, 1], where those partial sums are exact in f16 and bf16, so the dtype's
            # tolerance holds.
            bufs["x"], xbase = ctx.upload(ctx.rng.integers(-64, 65, size=base_size) / 64.0, dt)
        else:
            bufs["x"], xbase = ctx.rand(base_size, dt)
        xv = strided_view(xbase, q.x_shape, q.x_strides, q.x_offset)
        bufs["x"] = (bufs["x"], q.x_offset * itemsize(dt))
        nout = int(np.prod(q.out_shape))
        bufs["y"] = ctx.empty(nout * itemsize(dt))
        if "split_k" in p:
            bufs["tmp"] = ctx.empty(p["split_k"] * nout * itemsize(dt))
        if q.idx_shape is not None:
            nx = int(np.prod(q.x_shape[:-2]))
            nw = int(np.prod(q.w_batch))
            if q.sorted_rhs:  # lhs implied (x's rows in order), rhs sorted
                lhs = np.arange(nx, dtype=np.uint32).reshape(q.idx_shape)
                rhs = np.sort(ctx.rng.integers(0, nw, size=nx)).astype(np.uint32).reshape(q.idx_shape)
            else:
                lhs = ctx.rng.integers(0, nx, size=q.idx_shape).astype(np.uint32)
                rhs = ctx.rng.integers(0, nw, size=q.idx_shape).astype(np.uint32)
            bufs["lhs"], bufs["rhs"] = ctx.buffer(lhs), ctx.buffer(rhs)
        args = {i: (bufs[a] if isinstance(a, str) else a) for i, a in p["args"].items()}
        ctx.launch(p["name"], args, groups=p["groups"], threadgroup=p["threadgroup"], constants=p.get("constants"))
        if "split_k" in p:  # the sum over the split axis (reduce.metal)
            r = p["reduce"]
            ctx.launch(f"{REDUCE_FILE}:{r['name']}", {0: bufs["tmp"], 1: bufs["y"], **r["args"]}, groups=r["groups"],
                       threadgroup=r["threadgroup"])
        got = ctx.read(bufs["y"], dt, nout)
        wt = np.swapaxes(wq, -1, -2) if q.transpose else wq
        if p["route"] == "qmm":
            # qmm_t / qmm_n and their NAX forms dequantize the weights into threadgroup memory in the activation type
            # (quantized.h / quantized_nax.h `dequantize`: q * scale + bias in float, rounded once to T): an error
            # per weight whose sum grows with sqrt(K), so the reference multiplies by the same rounded weights.
            wt = rounded(wt, dt)
        if dt == "f32" and mode != "affine" and "_nax_" in p["name"]:
            # fp_quantized_nax.h keeps the dequantized weights as bfloat (its Wtype) and multiplies float x by them
            # with relaxed precision, which rounds x to bfloat first (docs/STDLIB.md); MLX takes these kernels for
            # float32 only under MLX_ENABLE_TF32 (quantized.cpp: reduced precision accepted; MLX's tests turn it off).
            xv = rounded(xv, "bf16")
        if q.idx_shape is not None:  # the gathered pairs
            xs = xv.reshape((-1,) + tuple(q.x_shape[-2:]))[lhs.reshape(-1)]
            want = np.matmul(xs, wt.reshape((-1,) + wt.shape[-2:])[rhs.reshape(-1)]).reshape(-1)
        else:
            want = np.matmul(xv, wt).reshape(-1)
        if "split_k" in p:
            # Split K keeps each partition's result, and the running sum of them, in the activation type: measure
            # the error against the largest of those magnitudes (a partial can be far larger than the final sum
            # when they cancel). The partitions are the kernel's: K / split_k (qmm), ceil(K / split_k) (qvm).
            sk = p["split_k"]
            step = q.K // sk if p["route"] == "qmm_splitk" else -(-q.K // sk)
            parts = np.stack([np.matmul(xv[..., i:i + step], wt[..., i:i + step, :]) for i in range(0, q.K, step)])
            scale = np.maximum(1.0, np.maximum(np.abs(parts), np.abs(np.cumsum(parts, axis=0))).max(0)).reshape(-1)
            ctx.check("y (error / largest partial)", got / scale, want / scale, tol=acc_tol(dt, q.K, p["route"]))
        else:
            ctx.check("y", got, want, tol=acc_tol(dt, q.K, p["route"]))

    kernels = [p["name"]] + ([f"{REDUCE_FILE}:{p['reduce']['name']}"] if "reduce" in p else [])
    return Case(name, family, file, kernels, run, note or " then ".join(kernels))


# ---------------------------------------------------------------------------------------------------------------
# fast::Quantize (quantize_impl): dequantize (no simdgroup functions) and quantize

def quantize_dims(nthreads):
    """get_quantize_kernel_dims: a 1-D grid of nthreads in threadgroups of min(1024, nthreads)."""
    return (nthreads, 1, 1), (min(1024, nthreads), 1, 1)


def dequantize_case(mode, dt, shape, gs=64, bits=4):
    """w (rows, cols) packed, scales (and biases) per group -> the dequantized (rows, cols) array."""
    if mode != "affine":
        gs, bits = FP_MODES[mode][0], FP_MODES[mode][1]
    ts = TYPE_STRING[dt]
    name = f"{mode}_dequantize_{ts}_gs_{gs}_b_{bits}" + ("" if mode == "affine" else "_hgs_false")
    rows, cols = shape
    per_thread = 8 if bits in (3, 5) else (4 if bits == 6 else 8 // bits)
    grid, tg = quantize_dims(rows * cols // per_thread)
    file = FILES["affine" if mode == "affine" else "fp"]
    gs_s = f"gs{gs}_b{bits}" if mode == "affine" else mode

    def run(ctx):
        w = ctx.rng.uniform(-1.0, 1.0, size=shape)
        if mode == "affine":
            codes, scales, biases = affine_quantize(w, gs, bits, lambda v: rounded(v, dt))
            want = affine_dequantize(codes, scales, biases, gs)
            args = {0: ctx.buffer(pack_rows(codes, bits)), 1: ctx.upload(scales, dt)[0],
                    2: ctx.upload(biases, dt)[0]}
        else:
            codes, scodes = fp_quantize(w, mode)
            want = fp_dequantize(codes, scodes, mode)
            args = {0: ctx.buffer(pack_rows(codes, bits)), 1: ctx.buffer(scodes.astype(np.uint8))}
        out = ctx.empty(rows * cols * itemsize(dt))
        args[3] = out
        ctx.launch(name, args, grid=grid, threadgroup=tg)
        # affine: scale * q + bias in the storage type (two roundings); fp: one rounding of the float product
        ctx.check("w", ctx.read(out, dt, rows * cols), want.reshape(-1), dt=dt)

    return Case(f"quantized.dequantize.{gs_s}.{dt}.{rows}x{cols}", "quantized", file, [name], run, name)


def quantize_case(dt, shape, gs=64, bits=4):
    """affine_quantize: w -> packed codes, scales, biases. What quantizing means: each value is stored as the level
    bias + q * scale (q in [0, 2^bits - 1]) nearest to it, one (scale, bias) per group. The check: the codes'
    levels (with the scales and biases as stored) are within half a step of w, or at the nearest end level for
    values beyond it, up to the rounding of the stored scale and bias; and each group's levels span its values."""
    ts = TYPE_STRING[dt]
    name = f"affine_quantize_{ts}_gs_{gs}_b_{bits}"
    rows, cols = shape
    per_thread = max(gs // 32, 1)
    grid, tg = quantize_dims(rows * cols // per_thread)

    def run(ctx):
        wbuf, w = ctx.rand(shape, dt)
        n = (1 << bits) - 1
        out = ctx.empty(rows * cols * bits // 8)
        sbuf, bbuf = ctx.empty(rows * cols // gs * itemsize(dt)), ctx.empty(rows * cols // gs * itemsize(dt))
        ctx.launch(name, {0: wbuf, 1: out, 2: sbuf, 3: bbuf}, grid=grid, threadgroup=tg)
        words = ctx.s.read(out, np.uint32, (rows, cols * bits // 32))
        q = unpack_rows(words, bits, cols).astype(np.float64)
        s = ctx.read(sbuf, dt, rows * cols // gs).reshape(rows, cols // gs)
        b = ctx.read(bbuf, dt, rows * cols // gs).reshape(rows, cols // gs)
        g = w.reshape(rows, cols // gs, gs)
        qg = q.reshape(rows, cols // gs, gs)
        levels = b[..., None] + qg * s[..., None]
        # the nearest level to each value given the stored scale and bias
        best = np.clip(np.rint((g - b[..., None]) / s[..., None]), 0, n)
        best_err = np.abs(g - (b[..., None] + best * s[..., None]))
        err = np.abs(g - levels)
        # the kernel picks q with its float scale and bias, before they are rounded to the storage type: allow
        # that rounding (n steps of a scale off by half an ulp, plus the bias's half ulp)
        eps = {"f32": 2.0 ** -24, "f16": 2.0 ** -11, "bf16": 2.0 ** -8}[dt]
        slack = (n * np.abs(s) + np.abs(b))[..., None] * eps * 2 + 1e-7
        ctx.check("|w - level(q)| - |w - nearest level|", (err - best_err) / np.abs(s)[..., None],
                  np.zeros_like(err), tol=float((slack / np.abs(s)[..., None]).max()))
        # MLX's affine quantization keeps 0 exactly representable: the bias is the group's edge value and the scale
        # is adjusted to edge / q0 (q0 = the edge in steps, rounded), so -bias / scale is a whole number of steps
        z = -b / s
        ctx.check("zero is a level (steps from a whole number)", z - np.rint(z), np.zeros_like(z),
                  tol=float(((np.abs(z) + 1) * eps * 2).max()) + 1e-6)
        # the levels cover the group, except what that adjustment takes off the far end: n / (2 |q0|) steps at most
        lo, hi = np.minimum(b, b + n * s), np.maximum(b, b + n * s)
        over = np.maximum(0, np.maximum(lo - g.min(-1), g.max(-1) - hi)) / np.abs(s)
        allowed = np.where(np.rint(z) == 0, 0.5, 0.5 + n / (2 * np.maximum(np.abs(np.rint(z)), 1)))
        ctx.check("group range covered (steps past the end level, over what is allowed)",
                  np.maximum(0, over - allowed), np.zeros_like(over), tol=1e-3)
        ctx.check_exact("codes in range", (q >= 0) & (q <= n), np.ones_like(q, dtype=bool))

    return Case(f"quantized.quantize.gs{gs}_b{bits}.{dt}.{rows}x{cols}", "quantized", FILES["affine"], [name],
                run, name)


def cases():
    A = "affine"
    # --- affine, transposed w (N, K): qmv_fast (N % 8 == 0, K a multiple of 512 (4-bit) / 256 (8-bit))
    yield qcase("qmv_fast", Q(A, "f16", (1, 1024), 136, gs=64, bits=4))
    yield qcase("qmv_fast", Q(A, "bf16", (1, 512), 48, gs=128, bits=8))
    yield qcase("qmv_fast", Q(A, "f32", (3, 512), 64, gs=32, bits=4))          # 3 vectors (below the limit, M2)
    # qmv: N % 8 != 0 (the last tile moves back), K not a multiple of the block (a guarded tail)
    yield qcase("qmv", Q(A, "f32", (1, 416), 37, gs=32, bits=4))
    yield qcase("qmv", Q(A, "f16", (2, 192), 5, gs=64, bits=8))               # N < 8: every read guarded
    yield qcase("qmv", Q(A, "bf16", (1, 384), 40, gs=128, bits=4))
    # x a row slice of a larger array (an offset into its buffer)
    yield qcase("qmv_x_offset", Q(A, "f32", (3, 256), 24, gs=64, bits=4, x_offset=256))
    # batched: w (B, N, K) -> _batch_1 with the shapes and strides
    yield qcase("qmv_fast_batch", Q(A, "f16", (2, 1, 512), 24, gs=64, bits=4, w_batch=(2,)))
    # x 2-D against a batched w: x's batch ndim is 0 (every batch reads the same x)
    yield qcase("qmv_batch_bcast_x", Q(A, "f32", (3, 320), 40, gs=32, bits=8, w_batch=(2,)))
    # qmv_quad: K == 64 or 128
    yield qcase("qmv_quad", Q(A, "f16", (1, 128), 100, gs=32, bits=4))
    yield qcase("qmv_quad", Q(A, "bf16", (4, 64), 72, gs=64, bits=8))
    # qmv_wide: affine on an M3 (M >= 2)
    yield qcase("qmv_wide", Q(A, "bf16", (7, 256), 50, gs=64, bits=4, dev=M3))   # 2 tiles of 4 vectors
    yield qcase("qmv_wide", Q(A, "f16", (5, 160), 33, gs=32, bits=8, dev=M3))
    # --- affine, w (K, N) not transposed, M < 4: qvm
    yield qcase("qvm", Q(A, "f32", (1, 100), 192, transpose=False, gs=64, bits=4))   # K % 32 != 0: the tail
    yield qcase("qvm", Q(A, "f16", (2, 64), 256, transpose=False, gs=128, bits=8))
    yield qcase("qvm_batch", Q(A, "bf16", (2, 1, 96), 64, transpose=False, gs=32, bits=4, w_batch=(2,)))
    # --- qmm_t: M at or past the vector limit (14 on an M2 for K, N <= 2048)
    # B == 1 goes through qmm_splitk, which keeps qmm_t when K is one 128-group (K / 128 = 1 partition)
    yield qcase("qmm_t", Q(A, "f16", (45, 128), 70, gs=128, bits=4))                 # alN_false, partial tiles
    yield qcase("qmm_t_batch", Q(A, "bf16", (2, 33, 96), 64, gs=32, bits=8, w_batch=(2,)))   # alN_true
    yield qcase("qmm_t_batch", Q(A, "f32", (2, 20, 128), 50, gs=64, bits=4, w_batch=(2,)))
    # x broadcast over the batch (stride 0)
    yield qcase("qmm_t_batch_bcast_x", Q(A, "f16", (3, 16, 64), 96, gs=64, bits=4, w_batch=(3,),
                                          x_strides=(0, 64, 1)))
    # B == 1 with K in whole 64-groups: qmm_splitk (split_k 8 = 512 / 64 partitions of 64), then the sum
    yield qcase("qmm_t_splitk", Q(A, "f32", (16, 512), 64, gs=64, bits=4))
    yield qcase("qmm_t_splitk", Q(A, "bf16", (20, 256), 40, gs=32, bits=8))    # alN_false
    # --- qvm_split_k: no transpose, M < 4, K >= 1024 (split_k 8 up to K = 8192), then the sum
    yield qcase("qvm_split_k", Q(A, "f16", (1, 1024), 128, transpose=False, gs=64, bits=4))
    yield qcase("qvm_split_k", Q(A, "f32", (2, 1100), 64, transpose=False, gs=32, bits=8))  # K % 8 != 0
    # --- qmm_n: w (K, N), M >= 4
    yield qcase("qmm_n", Q(A, "f16", (37, 100), 128, transpose=False, gs=64, bits=4))  # K % 32 != 0
    yield qcase("qmm_n", Q(A, "bf16", (4, 256), 256, transpose=False, gs=128, bits=4))
    yield qcase("qmm_n_x_offset", Q(A, "f16", (6, 96), 64, transpose=False, gs=64, bits=8, x_offset=3 * 96))
    yield qcase("qmm_n_batch", Q(A, "f32", (2, 40, 64), 96, transpose=False, gs=32, bits=8, w_batch=(2,)))
    # --- the other affine widths (2, 3, 5, 6 bits: 3/5/6 pack 8/8/4 values into 3/5/3 bytes)
    yield qcase("qmv_fast", Q(A, "f16", (1, 512), 16, gs=32, bits=3))
    yield qcase("qmv", Q(A, "f32", (2, 320), 21, gs=64, bits=6))
    yield qcase("qmv_fast", Q(A, "bf16", (1, 512), 32, gs=128, bits=2))
    yield qcase("qvm", Q(A, "f16", (1, 96), 128, transpose=False, gs=32, bits=5))
    yield qcase("qmm_t_batch", Q(A, "f32", (2, 24, 128), 40, gs=64, bits=3, w_batch=(2,)))
    yield qcase("qmm_n", Q(A, "bf16", (9, 64), 128, transpose=False, gs=64, bits=6))
    # --- fp formats (fp_quantized.metal)
    yield qcase("qmv_fast", Q("mxfp4", "f16", (1, 512), 64))
    yield qcase("qmv_fast", Q("mxfp8", "bf16", (1, 256), 40))
    yield qcase("qmv", Q("nvfp4", "f32", (1, 336), 30))
    yield qcase("qmv_fast_narrow", Q("nvfp4", "bf16", (1, 512), 4104, dev=M5MAX))   # _r_2: 2 rows a simdgroup
    yield qcase("qmv", Q("mxfp8", "f16", (1, 96), 20))
    yield qcase("qmv_quad", Q("mxfp4", "f16", (1, 128), 40))
    yield qcase("qmv_wide", Q("mxfp4", "bf16", (3, 256), 44))                  # fp modes: qmv_wide on any GPU
    yield qcase("qmv_wide", Q("nvfp4", "f32", (6, 64 * 3), 17))                # 2 tiles of 3 vectors
    yield qcase("qmv_wide_batch", Q("mxfp8", "f16", (2, 4, 192), 36, w_batch=(2,)))     # _batch_1
    yield qcase("qmv_quad_batch", Q(A, "f32", (3, 2, 64), 40, gs=32, bits=4, w_batch=(3,)))  # _batch_1
    yield qcase("qvm", Q("nvfp4", "f16", (1, 80), 64, transpose=False))
    yield qcase("qvm", Q("mxfp8", "f32", (2, 70), 96, transpose=False))
    yield qcase("qmm_t_batch", Q("mxfp4", "f32", (2, 20, 64), 40, w_batch=(2,)))
    yield qcase("qmm_n", Q("mxfp8", "bf16", (8, 64), 64, transpose=False))
    yield qcase("qvm_split_k", Q("mxfp4", "bf16", (1, 2048), 64, transpose=False))
    # --- dequantize (fast::Quantize with dequantize; no simdgroup functions: these run on lavapipe too)
    yield dequantize_case(A, "f16", (33, 128), gs=64, bits=4)
    yield dequantize_case(A, "bf16", (7, 96), gs=32, bits=8)
    yield dequantize_case(A, "f32", (5, 256), gs=128, bits=3)
    yield dequantize_case(A, "f32", (6, 128), gs=64, bits=6)
    yield dequantize_case(A, "f16", (3, 160), gs=32, bits=5)
    yield dequantize_case(A, "f32", (4, 128), gs=32, bits=2)
    yield dequantize_case("mxfp4", "f32", (9, 64))
    yield dequantize_case("nvfp4", "f16", (5, 48))
    yield dequantize_case("mxfp8", "bf16", (4, 96))
    # --- quantize (simd_min / simd_max over each group)
    yield quantize_case("f32", (16, 256), gs=64, bits=4)
    yield quantize_case("f16", (8, 128), gs=32, bits=8)
    yield quantize_case("bf16", (4, 256), gs=128, bits=4)
    # --- gather_qmm (GatherQMM, right indices unsorted): x[lhs[i]] against expert w[rhs[i]]
    yield qcase("gather_qmv_fast", Q(A, "f16", (3, 1, 512), 32, gs=64, bits=4, w_batch=(4,), idx_shape=(5,)))
    yield qcase("gather_qmv", Q(A, "bf16", (2, 2, 96), 20, gs=32, bits=8, w_batch=(3,), idx_shape=(2, 3)))
    yield qcase("gather_qvm", Q(A, "f32", (4, 1, 100), 128, transpose=False, gs=64, bits=4, w_batch=(3,),
                                idx_shape=(6,)))
    yield qcase("gather_qmm_t", Q(A, "f16", (2, 20, 128), 40, gs=64, bits=4, w_batch=(3,), idx_shape=(3,)))
    yield qcase("gather_qmm_n", Q(A, "bf16", (2, 8, 64), 96, transpose=False, gs=32, bits=4, w_batch=(3,),
                                  idx_shape=(4,)))
    yield qcase("gather_qmv", Q("mxfp4", "f32", (2, 1, 256), 24, w_batch=(3,), idx_shape=(4,)))
    yield qcase("gather_qmm_t", Q("mxfp8", "f16", (1, 16, 64), 32, w_batch=(2,), idx_shape=(3,)))
