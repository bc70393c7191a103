"""Reductions (reduce.metal, kernels/reduction/*), launched as mlx/backend/metal/reduce.cpp launches them.

Reduce::eval_gpu takes the reduction plan of the input and its axes (get_reduction_plan, re-expressed below) and
picks: ContiguousAllReduce -> all_reduce (one threadgroup up to 4096 elements, else two passes through an
intermediate of 128 or 4096 partials); ContiguousReduce / GeneralContiguousReduce -> row reduce (row_reduce_small
for rows <= 64, in its one-thread-per-output or simdgroup-per-output form; row_reduce_simple for plain contiguous
rows with >= 32 outputs; row_reduce_looped otherwise); ContiguousStridedReduce / GeneralStridedReduce -> column
reduce (col_reduce_small for < 32 reduced elements per output; col_reduce_longcolumn + col_reduce_looped for
narrow long columns; col_reduce_2pass + col_reduce_looped when there are few outputs; col_reduce_looped). An empty
input only runs init_reduce. GeneralReduce (MLX copies the input with copy.metal first) is not reached here.

Inputs are row-contiguous arrays or arrays seen through a transpose (MLX's transpose: contiguous, not
row-contiguous), the reduced axes sorted as MLX's ops pass them, the output a fresh row-contiguous array of the
input's shape with the reduced axes kept as size 1 (the primitive's output before the squeeze)."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _reduce_util import View, check_scaled, collapse, grid_2d  # noqa: E402
from mlxhost import ceildiv, row_strides  # noqa: E402
from mlxrun import MAX_THREADS, Case, i32, itemsize, tname, vec  # noqa: E402

FILE = "reduce.metal"
N_READS = 4  # REDUCE_N_READS
N_WRITES = 4  # REDUCE_N_WRITES
INT32_MAX = (1 << 31) - 1

CONTIGUOUS_ALL, CONTIGUOUS, CONTIGUOUS_STRIDED, GENERAL_CONTIGUOUS, GENERAL_STRIDED, GENERAL = (
    "ContiguousAllReduce", "ContiguousReduce", "ContiguousStridedReduce", "GeneralContiguousReduce",
    "GeneralStridedReduce", "GeneralReduce")


def u64(v):
    return np.uint64(v)


def i64(v):
    return np.int64(v)


# ---------------------------------------------------------------------------------------------------------------
# Host logic

def reduction_plan(view, axes):
    """get_reduction_plan: (type, shape, strides) of the reduced axes, merged where they are contiguous."""
    shape, strides = view.shape, view.strides
    if len(axes) == len(shape) and view.contiguous:
        return CONTIGUOUS_ALL, [], []
    if view.row_contiguous:
        ps, pst = [shape[axes[0]]], [strides[axes[0]]]
        for i in range(1, len(axes)):
            if axes[i] - 1 == axes[i - 1] and shape[axes[i]] > 1:
                ps[-1] *= shape[axes[i]]
                pst[-1] = strides[axes[i]]
            else:
                ps.append(shape[axes[i]])
                pst.append(strides[axes[i]])
        keep = [i for i in range(len(ps)) if ps[i] != 1]
        ps, pst = [ps[i] for i in keep], [pst[i] for i in keep]
        if pst[-1] == 1:
            return CONTIGUOUS, ps, pst
        if pst[-1] > 1:
            return CONTIGUOUS_STRIDED, ps, pst
    # Sort the reduced axes by decreasing stride (stride-0 axes first) and merge contiguous neighbours.
    red = [(shape[a], strides[a]) for a in axes if shape[a] > 1]
    red.sort(key=lambda r: (r[1] != 0, -r[1]))
    i = len(red) - 1
    while i >= 1:
        a, b = red[i], red[i - 1]
        if b[1] == a[0] * a[1]:
            del red[i]
            red[i - 1] = (a[0] * b[0], a[1])
        i -= 1
    ps, pst = [r[0] for r in red], [r[1] for r in red]
    if pst[-1] == 1:
        return GENERAL_CONTIGUOUS, ps, pst
    if pst[-1] > 1:
        size, have_expand = 1, False
        for i in range(len(shape) - 1, -1, -1):
            if axes[-1] == i:
                continue
            if strides[i] == 0:
                if shape[i] == 1:
                    continue
                have_expand = True
                break
            if strides[i] != size and shape[i] != 1:
                break
            size *= shape[i]
        if size > pst[-1] or (size == pst[-1] and not have_expand):
            return GENERAL_STRIDED, ps, pst
    return GENERAL, ps, pst


def without_axes(view, axes):
    shape = [s for i, s in enumerate(view.shape) if i not in axes]
    strides = [s for i, s in enumerate(view.strides) if i not in axes]
    return shape, strides


def remap_types(dt, op):
    """remap_reduce_types for the dtypes used here: (kernel input type, output type). Integer sums and products
    accumulate in 32 bits (int8 -> int32; bool is summed as int8 into int32); and/or test floats as floats and
    other types by their width; everything else keeps its type."""
    if op in ("sum", "prod"):
        if dt in ("i8", "bool"):
            return "i8", "i32"
        return dt, dt
    if op in ("and", "or"):
        if dt in ("f32", "f16", "bf16"):
            return dt, "bool"
        return {1: "bool", 2: "i16", 4: "i32", 8: "i64"}[itemsize(dt)], "bool"
    return dt, dt


def kernel_ndim(reduce_ndim):
    return 1 if reduce_ndim <= 1 else (2 if reduce_ndim == 2 else 5)


def tg_from_row_size(row_size):
    if row_size <= 512:
        return 32
    if row_size <= 1024:
        return 128
    t = ceildiv(row_size, N_READS)
    return min(1024, ceildiv(t, 32) * 32)


class Out:
    def __init__(self, shape, dt):
        self.shape = list(shape)
        self.strides = row_strides(self.shape)
        self.size = int(np.prod(self.shape))
        self.dt = dt
        self.buf = None


def encode_row_args(row_size, non_row, shape, strides, rshape, rstrides):
    """RowReduceArgs::encode (empty vectors go as one 0)."""
    return {2: u64(row_size), 3: u64(non_row), 4: vec(shape, np.int32), 5: vec(strides, np.int64),
            6: i32(len(shape)), 7: vec(rshape, np.int32), 8: vec(rstrides, np.int64), 9: i32(len(rshape))}


def encode_col_args(rsize, rstride, shape, strides, rshape, rstrides, non_col):
    """ColReduceArgs::encode."""
    return {2: u64(rsize), 3: i64(rstride), 4: vec(shape, np.int32), 5: vec(strides, np.int64),
            6: i32(len(shape)), 7: vec(rshape, np.int32), 8: vec(rstrides, np.int64), 9: i32(len(rshape)),
            10: u64(non_col)}


def all_reduce(ctx, op, dt, src, view, out):
    in_t, out_t = remap_types(dt, op)
    name = f"all_reduce_{op}{tname(in_t)}"
    n = view.size
    if n <= N_READS * 1024:
        tg = ceildiv(ceildiv(n, N_READS), 32) * 32
        ctx.launch(name, {0: src, 1: out, 2: u64(n), 3: u64(n)}, grid=(tg,), threadgroup=(tg,))
        return
    if n * itemsize(dt) <= (1 << 26):
        n_rows, tg2 = 32 * N_READS, 32
    else:
        n_rows, tg2 = 1024 * N_READS, 1024
    inter = ctx.empty(n_rows * itemsize(out_t))
    row_size = ceildiv(n, n_rows)
    tg = min(ceildiv(row_size, N_READS), 1024)
    tg = ceildiv(tg, 32) * 32
    ctx.launch(name, {0: src, 1: inter, 2: u64(n), 3: u64(row_size)}, grid=(tg, n_rows), threadgroup=(tg,))
    ctx.launch(f"all_reduce_{op}{tname(out_t)}", {0: inter, 1: out, 2: u64(n_rows), 3: u64(n_rows)},
               grid=(tg2,), threadgroup=(tg2,))


def row_reduce(ctx, op, dt, src, view, axes, plan, out):
    ptype, pshape, pstrides = plan
    row_size = pshape[-1]
    rshape, rstrides = pshape[:-1], pstrides[:-1]
    non_row = int(np.prod(rshape)) if rshape else 1
    shape, strides = collapse(*without_axes(view, axes))
    in_t, _ = remap_types(dt, op)
    args = encode_row_args(row_size, non_row, shape, strides, rshape, rstrides)
    large = view.size > INT32_MAX
    gw, gh, _ = grid_2d(out.shape, out.strides)
    if row_size <= 64:
        name = f"row_reduce_small{'_large' if large else ''}_{kernel_ndim(len(rshape))}_reduce_{op}{tname(in_t)}"
        if (non_row < 32 and row_size <= 8) or non_row <= 8:
            grid, group = (gw, gh, 1), (min(gw, 1024), 1, 1)
        else:
            grid, group = (32, gw, gh), (32, 1, 1)
        ctx.launch(name, {0: src, 1: out.buf, **args}, grid=grid, threadgroup=group)
    elif ptype == CONTIGUOUS and len(rshape) == 0 and view.size // row_size >= 32:
        name = f"row_reduce_simple_{op}{tname(in_t)}"
        gw = ceildiv(gw, N_WRITES)
        tg = tg_from_row_size(row_size)
        if itemsize(dt) == 8:
            tg = min(tg, 512)
        ctx.launch(name, {0: src, 1: out.buf, 2: u64(row_size), 3: u64(out.size)}, grid=(tg, gw, gh),
                   threadgroup=(tg,))
    else:
        name = f"row_reduce_looped{'_large' if large else ''}_{kernel_ndim(len(rshape))}_reduce_{op}{tname(in_t)}"
        tg = tg_from_row_size(row_size)
        ctx.launch(name, {0: src, 1: out.buf, **args}, grid=(tg, gw, gh), threadgroup=(tg,))


def out_grid_for_col(out, rstride):
    shape, strides = list(out.shape), list(out.strides)
    while shape and strides[-1] < rstride:
        shape.pop()
        strides.pop()
    return grid_2d(shape, strides)


def second_pass(ctx, op, out_t, inter, outer_blocks, out):
    """The col_reduce_looped pass over the row-contiguous (outer_blocks, *out.shape) intermediate."""
    args = encode_col_args(outer_blocks, out.size, [], [], [outer_blocks], [out.size], 1)
    ctx.launch(f"col_reduce_looped_1_32_32_reduce_{op}{tname(out_t)}", {0: inter, 1: out.buf, **args},
               grid=(256 * ceildiv(out.size, 32),), threadgroup=(256,))


def col_reduce(ctx, op, dt, src, view, axes, plan, out):
    _, pshape, pstrides = plan
    rsize, rstride = pshape[-1], pstrides[-1]
    rshape, rstrides = list(pshape[:-1]), list(pstrides[:-1])
    non_col = int(np.prod(rshape)) if rshape else 1
    shape, strides = without_axes(view, axes)
    stride_back = 1
    while shape and stride_back < rstride:
        stride_back *= shape[-1]
        shape.pop()
        strides.pop()
    shape, strides = collapse(shape, strides)
    in_t, out_t = remap_types(dt, op)
    large = view.size > INT32_MAX
    total = rsize * non_col
    # every branch appends the column axis to the looped reduce axes
    rshape.append(rsize)
    rstrides.append(rstride)
    n = kernel_ndim(len(rshape))
    args = encode_col_args(rsize, rstride, shape, strides, rshape, rstrides, non_col)
    gw, gh, _ = out_grid_for_col(out, rstride)
    if total < 32:
        name = f"col_reduce_small{'_large' if large else ''}_{n}_reduce_{op}{tname(in_t)}"
        blocks = ceildiv(rstride, 4)
        tx = min(blocks, 32)
        ty = min(8, min(MAX_THREADS // tx, total))
        ctx.launch(name, {0: src, 1: out.buf, **args}, groups=(ceildiv(blocks, tx), gw, gh), threadgroup=(tx, ty))
    elif rstride < 32 and total >= 1024:
        outer_blocks = 128 if total >= 32768 else 32
        inter = ctx.empty(outer_blocks * out.size * itemsize(out_t))
        ty = min(32, ceildiv(total, outer_blocks))
        name = f"col_reduce_longcolumn{'_large' if large else ''}_{n}_reduce_{op}{tname(in_t)}"
        ctx.launch(name, {0: src, 1: inter, **args, 11: u64(out.size)}, groups=(gw, gh, outer_blocks),
                   threadgroup=(rstride, ty))
        second_pass(ctx, op, out_t, inter, outer_blocks, out)
    elif total > 256 and out.size // 32 < 1024:
        inter = ctx.empty(32 * out.size * itemsize(out_t))
        name = f"col_reduce_2pass{'_large' if large else ''}_{n}_32_32_reduce_{op}{tname(in_t)}"
        ctx.launch(name, {0: src, 1: inter, **args, 11: u64(out.size // rstride)},
                   grid=(256 * ceildiv(rstride, 32), gw * 32, gh), threadgroup=(256,))
        second_pass(ctx, op, out_t, inter, 32, out)
    else:
        name = f"col_reduce_looped{'_large' if large else ''}_{n}_32_32_reduce_{op}{tname(in_t)}"
        ctx.launch(name, {0: src, 1: out.buf, **args}, grid=(256 * ceildiv(rstride, 32), gw, gh),
                   threadgroup=(256,))


def launch_reduce(ctx, op, dt, src, view, axes, out):
    """Reduce::eval_gpu for an input `view` (of a buffer `src`) and sorted `axes`; `out` an Out with .buf."""
    if view.size == 0:
        _, out_t = remap_types(dt, op)
        ctx.launch(f"init_reduce_{op}{tname(out_t)}", {0: out.buf}, grid=(out.size,),
                   threadgroup=(min(MAX_THREADS, out.size),))
        return
    plan = reduction_plan(view, axes)
    if plan[0] == GENERAL:
        raise NotImplementedError("GeneralReduce: MLX copies the input with copy.metal first")
    if plan[0] == CONTIGUOUS_ALL:
        all_reduce(ctx, op, dt, src, view, out.buf)
    elif plan[0] in (CONTIGUOUS, GENERAL_CONTIGUOUS):
        row_reduce(ctx, op, dt, src, view, axes, plan, out)
    else:
        col_reduce(ctx, op, dt, src, view, axes, plan, out)


class DryRun:
    """Records the kernel names a launch sequence uses, without a device."""

    def __init__(self):
        self.names = []

    def launch(self, name, *a, **k):
        if name not in self.names:
            self.names.append(name)

    def empty(self, nbytes, poison=True):
        return None


# ---------------------------------------------------------------------------------------------------------------
# Inputs and references

def make_values(rng, n, op, dt, red_len):
    """float64 / int / bool values for the op. Float sums in f16/bf16 use values on a coarse grid (k/8 in [-1, 1]
    for f16, -1/0/1 for bf16) so every partial sum the kernel forms is exact (|partial| stays far below 256):
    the kernel's accumulation order then cannot change the result and any lost or doubled element shows."""
    if dt == "bool" and op not in ("and", "or"):
        return rng.random(n) < 0.5
    if dt == "bool":
        p = min(0.5, 1.0 / max(1, red_len))
        return (rng.random(n) >= p) if op == "and" else (rng.random(n) < p)
    if op in ("and", "or"):  # float input tested for non-zero: zeros (both signs) and a few non-zeros
        p = min(0.5, 1.0 / max(1, red_len))
        v = rng.uniform(-2, 2, n)
        if op == "and":
            zero = rng.random(n) < p
        else:
            zero = rng.random(n) >= p
        v[zero] = np.where(rng.random(int(zero.sum())) < 0.5, 0.0, -0.0)
        return v
    if op == "sum":
        if dt == "f32":
            return rng.uniform(-1, 1, n)
        if dt == "f16":
            return rng.integers(-8, 9, n) / 8.0
        if dt == "bf16":
            return rng.integers(-1, 2, n).astype(np.float64)
        return rng.integers(-100, 101, n)  # int32, and int8 (summed into int32)
    if op == "prod":  # powers of two with signs: products are exact while the exponent stays in range
        if dt == "i32":
            return rng.choice(np.array([1, 1, 1, -1, 2]), n)
        return rng.choice(np.array([1.0, -1.0, 2.0, 0.5, -2.0, -0.5, 1.0, 1.0]), n)
    if dt == "i32":
        return rng.integers(-1000, 1001, n)
    return rng.uniform(-10, 10, n)


def reference(op, x, axes):
    ax = tuple(axes)
    if op == "sum":
        return np.sum(x, axis=ax, keepdims=True)
    if op == "prod":
        if x.dtype.kind in "iu":  # int32 products wrap: exact in int64 then wrapped to 32 bits
            return np.prod(x.astype(np.int64), axis=ax, keepdims=True).astype(np.int32)
        return np.prod(x, axis=ax, keepdims=True)
    if op == "max":
        return np.max(x, axis=ax, keepdims=True)
    if op == "min":
        return np.min(x, axis=ax, keepdims=True)
    if op == "and":
        return np.all(x != 0, axis=ax, keepdims=True)
    if op == "or":
        return np.any(x != 0, axis=ax, keepdims=True)
    raise ValueError(op)


def reduce_case(variant, op, dt, base_shape, axes, perm=None, note="", view=None):
    """`view`: an explicit View (a broadcast) instead of base_shape seen through `perm`."""
    view = view or View(base_shape, perm)
    data_size = int(np.prod(view.base_shape))
    axes = sorted(a % len(view.shape) for a in axes)
    out_shape = [1 if i in axes else s for i, s in enumerate(view.shape)]
    _, out_t = remap_types(dt, op)
    dry = DryRun()
    launch_reduce(dry, op, dt, None, view, axes, Out(out_shape, out_t))
    red_len = int(np.prod([view.shape[a] for a in axes])) if view.size else 0

    def run(ctx):
        n = data_size
        vals = make_values(ctx.rng, n, op, dt, red_len)
        if n == 0:
            src, stored = None, np.zeros(0)
        elif dt == "bool":
            src = ctx.buffer(vals.astype(np.bool_))
            stored = vals.astype(np.bool_)
        else:
            src, stored = ctx.upload(vals, dt)
        out = Out(out_shape, out_t)
        out.buf = ctx.empty(max(out.size * itemsize(out_t), 4))
        launch_reduce(ctx, op, dt, src, view, axes, out)
        x = view.values(stored)
        want = reference(op, x.astype(np.float64) if dt in ("f32", "f16", "bf16") else x, axes)
        got = ctx.read(out.buf, out_t, out.size)
        if out_t not in ("f32", "f16", "bf16") or op in ("max", "min", "prod"):
            # exact: integers, bools, max/min pick an input, products of signed powers of two
            ctx.check_exact("out", got, want.reshape(-1))
        elif dt == "f32":
            scale = np.sqrt(np.sum(x.astype(np.float64) ** 2, axis=tuple(axes), keepdims=True))
            check_scaled(ctx, "out", got, want.reshape(-1), scale.reshape(-1), dt)
        else:
            ctx.check("out", got, want.reshape(-1), dt=dt)  # exact partial sums (see make_values)

    shape_s = "x".join(map(str, view.shape)) + view.tag
    name = f"reduce.{variant}.{op}.{dt}.{shape_s}.ax{''.join(map(str, axes))}"
    return Case(name, "reduce", FILE, dry.names, run, note=note)


def cases():
    # all_reduce: one threadgroup (<= 4096 elements), two passes through 128 partials, two passes through 4096
    yield reduce_case("all_small", "sum", "f32", (1000,), [0])
    yield reduce_case("all_small", "max", "bf16", (64, 64), [0, 1])
    yield reduce_case("all_small", "or", "bool", (77, 13), [0, 1])
    yield reduce_case("all_2pass", "sum", "f16", (300, 37), [0, 1])
    yield reduce_case("all_2pass", "sum", "i32", (100003,), [0])
    yield reduce_case("all_2pass", "min", "f32", (50, 40, 30), [0, 1, 2], perm=(2, 0, 1),
                      note="transposed input: still contiguous, so the all-reduce plan")
    yield reduce_case("all_2pass_large", "sum", "f32", (4100, 4100), [0, 1],
                      note="> 2^26 bytes: 4096 first-pass rows, 1024-thread second pass")
    # row_reduce_small: one thread per output (few non-row reductions) and one simdgroup per output
    yield reduce_case("row_small", "sum", "f32", (129, 50), [1])
    yield reduce_case("row_small", "prod", "f16", (33, 7), [1])
    yield reduce_case("row_small_simd", "max", "f16", (12, 40, 20), [0, 2])
    yield reduce_case("row_small_simd", "sum", "bf16", (3, 4, 5, 6, 20), [0, 2, 4])
    yield reduce_case("row_small", "min", "i32", (2, 3, 2, 3, 2, 3, 16), [0, 2, 4, 6],
                      note="three non-row reduce dims: the NDIMS=5 looped-elem-to-loc kernel")
    # row_reduce_simple: contiguous rows, >= 32 of them
    yield reduce_case("row_simple", "sum", "f32", (256, 1000), [1])
    yield reduce_case("row_simple", "sum", "f16", (37, 3001), [1])
    yield reduce_case("row_simple", "max", "bf16", (40, 700), [1])
    yield reduce_case("row_simple", "prod", "i32", (64, 100), [1])
    # row_reduce_looped: few rows, non-row reductions, and a transposed input (GeneralContiguousReduce)
    yield reduce_case("row_looped", "sum", "f32", (8, 5000), [1])
    yield reduce_case("row_looped", "min", "f32", (6, 10, 300), [0, 2])
    yield reduce_case("row_looped_general", "sum", "bf16", (6, 40, 100), [2], perm=(1, 0, 2))
    yield reduce_case("row_looped", "and", "bool", (5, 9, 4, 130), [1, 3])
    # col_reduce_small (no simdgroup functions: these run on lavapipe too)
    yield reduce_case("col_small", "sum", "f32", (20, 100), [0])
    yield reduce_case("col_small", "max", "f16", (7, 9, 53), [1])
    yield reduce_case("col_small", "prod", "bf16", (3, 6, 5, 40), [0, 2])
    yield reduce_case("col_small", "min", "i32", (31, 3), [0])
    yield reduce_case("col_small", "or", "f32", (4, 17, 130), [1])
    yield reduce_case("col_small", "and", "bool", (2, 3, 4, 5, 6), [0, 1, 3])
    yield reduce_case("col_small", "sum", "f32", (2, 3, 2, 3, 2, 5), [0, 2, 4],
                      note="three reduce dims that do not merge: the NDIMS=5 looped-elem-to-loc kernel")
    yield reduce_case("col_small", "max", "i32", (2, 3, 2, 3, 2, 3), [0, 2, 4],
                      note="the same with 3-element columns (every thread on the partial-column path): wrong on "
                           "lavapipe like the MaxPool3d case below, so not in run_floor.txt")
    yield reduce_case("col_small_window", "max", "i32", None, [4, 5, 6],
                      view=View.strided(54, (1, 1, 2, 2, 2, 2, 2, 3), (54, 27, 9, 3, 27, 9, 3, 1)),
                      note="MaxPool3d (kernel 2, stride 1) of a (1, 2, 3, 3, 3) input: max over the three window "
                           "axes of its 8-D sliding-window view (GeneralStridedReduce, NDIMS=5); wrong on lavapipe "
                           "(Mesa 22.3.6, the loop nest of e2e's CounterLoops), so not in run_floor.txt")
    # col_reduce_longcolumn + col_reduce_looped second pass (32 and 128 outer blocks)
    yield reduce_case("col_longcolumn", "sum", "f32", (2000, 24), [0])
    yield reduce_case("col_longcolumn", "sum", "i32", (40000, 7), [0])
    # col_reduce_2pass + col_reduce_looped second pass
    yield reduce_case("col_2pass", "sum", "f32", (1000, 300), [0])
    yield reduce_case("col_2pass", "max", "bf16", (8, 300, 70), [0, 1])
    # col_reduce_looped: short columns, many outputs, two reduce dims, a transposed input (GeneralStridedReduce)
    yield reduce_case("col_looped", "sum", "f16", (100, 77), [0])
    yield reduce_case("col_looped", "min", "f32", (8, 5, 9, 70), [0, 2])
    yield reduce_case("col_looped", "sum", "f32", (260, 33000), [0])
    yield reduce_case("col_looped_general", "max", "i32", (8, 50, 33), [0], perm=(1, 0, 2))
    # integer widening: int8 and bool summed into int32 (kernels named after the int8 input)
    yield reduce_case("row_simple", "sum", "i8", (50, 300), [1])
    yield reduce_case("all_2pass", "sum", "i8", (9000,), [0], note="first pass int8 -> int32, second pass int32")
    yield reduce_case("col_small", "sum", "bool", (13, 70), [0], note="bool counted as int8 into int32")
    yield reduce_case("col_small", "or", "i32", (9, 40), [0], note="int32 tested for non-zero as int32")
    # broadcast inputs (stride 0): the general plans
    yield reduce_case("row_small_bcast", "sum", "f32", None, [0], view=View.strided(40, (40, 64), (1, 0)),
                      note="(40,) broadcast along a new last axis, reduced over axis 0: GeneralContiguousReduce")
    yield reduce_case("row_small_bcast", "max", "f32", None, [0, 1], view=View.strided(64, (40, 64), (0, 1)),
                      note="every axis of a broadcast array: not contiguous, so a row reduce with no output dims")
    yield reduce_case("col_looped_bcast", "sum", "f32", None, [0, 1],
                      view=View.strided(1500, (30, 8, 50), (50, 0, 1)),
                      note="(30, 50) broadcast along a middle axis, reduced over the first two: GeneralStridedReduce")
    # empty input: only init_reduce
    yield reduce_case("init", "sum", "f32", (0, 5), [0])
