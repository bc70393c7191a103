"""Host steps shared by softmax.py, norms.py and rope.py that launch kernels of another .metal file than the case's
own: copy_gpu's copies (copy.metal: the contiguous copy MLX makes of an input whose last axis is not contiguous, and
RoPE's copy of the input into the output) and strided_reduce_general_dispatch's column "sum" (reduce.metal: how
LayerNormVJP/RMSNormVJP sum the per-row weight gradients, and LayerNormVJP the bias gradient).

A Case names one file, so these kernels are not in Case.kernels: each family declares the extra entries it may
launch with `need(file, entries)` when its cases are built, and the first case that launches one compiles all the
declared entries of that file once (cached on the runner). A compile failure surfaces as the case's error.
"""
import os

import numpy as np

import metal2vk as m2v
from mlxhost import block_dims, ceildiv, collapse_contiguous_dims, row_strides, work_per_thread
from mlxrun import MAX_THREADS, i32, itemsize, tname, vec

COPY = "copy.metal"
REDUCE = "reduce.metal"

_EXTRA = {}  # file -> entries declared by the cases


def need(file, entries):
    """Declares kernels of `file` that cases may launch; returns them as 'file:entry' strings (for Case.note)."""
    _EXTRA.setdefault(file, set()).update(entries)
    return [f"{file}:{e}" for e in entries]


def _extra_kernel(ctx, file, entry):
    runner = ctx.runner
    libs = runner.__dict__.setdefault("_rowops_libs", {})
    if file not in libs:
        lib = m2v.compile_library(os.path.join(runner.kernels_dir, file), entries=sorted(_EXTRA.get(file, {entry})),
                                  include_dirs=[runner.mlx_root], jobs=runner.jobs, partial=True)
        libs[file] = lib
    lib = libs[file]
    if entry not in lib:
        first = next((ln for ln in lib.diagnostics.splitlines() if "error" in ln), "entry point not produced")
        raise RuntimeError(f"{file}:{entry} did not compile: {first}")
    return lib[entry]


def launch_other(ctx, file, entry, args, **kw):
    """ctx.launch for an entry point of another file (same binding, constants and dispatch rules)."""
    kernel = _extra_kernel(ctx, file, entry)
    ctx.kernel = lambda _entry: kernel  # shadows Ctx.kernel for this one launch
    try:
        ctx.launch(entry, args, **kw)
    finally:
        del ctx.kernel


# --- copy_gpu (copy.cpp) -----------------------------------------------------------------------------------------
def copy_vector_name(dt, n):
    return f"{'vn' if work_per_thread(itemsize(dt), n) > 1 else 'v'}_copy{tname(dt)}{tname(dt)}"


def copy_vector(ctx, dt, src, dst, n):
    """CopyType::Vector: one size argument, work_per_thread elements per thread, 1-D grid."""
    wpt = work_per_thread(itemsize(dt), n)
    nthreads = ceildiv(n, wpt)
    launch_other(ctx, COPY, copy_vector_name(dt, n), {0: src, 1: dst, 2: i32(n)}, grid=(nthreads,),
                 threadgroup=(min(MAX_THREADS, nthreads),))


def copy_general_name(dt, shape, strides):
    cshape, _ = collapse_contiguous_dims(shape, strides, row_strides(shape))
    nd = len(cshape)
    return f"{'g%d' % nd if nd <= 3 else 'gn2'}_copy{tname(dt)}{tname(dt)}"


def copy_general(ctx, dt, src, shape, strides, dst, offset=0):
    """CopyType::General into a fresh row-contiguous array (contiguous_copy_gpu): dims collapsed over the input and
    output strides, g1/g2/g3 up to 3 dims else gn2 (2 elements per thread along dim0), block_dims threadgroups."""
    cshape, (cin, _cout) = collapse_contiguous_dims(shape, strides, row_strides(shape))
    nd = len(cshape)
    args = {0: (src, offset * itemsize(dt)), 1: dst, 3: vec(cin, np.int64)}
    dim0 = cshape[-1] if nd > 0 else 1
    dim1 = cshape[-2] if nd > 1 else 1
    rest = int(np.prod(cshape)) // (dim0 * dim1)
    if nd > 3:
        args[2] = vec(cshape, np.int32)
        args[5] = i32(nd)
        dim0 = ceildiv(dim0, 2)
    launch_other(ctx, COPY, copy_general_name(dt, shape, strides), args, grid=(dim0, dim1, rest),
                 threadgroup=block_dims(dim0, dim1, rest))


# --- strided_reduce_general_dispatch (reduce.cpp) for a "sum" over axis 0 of a row-contiguous (n, axis) array ----
def col_sum_plan(n, axis):
    """Which path strided_reduce_general_dispatch takes for ReductionPlan(ContiguousStridedReduce, {n}, {axis}) with
    axes {0}: reduction_size n, reduction_stride axis, no other reduced dims (non_col_reductions 1)."""
    if n < 32:
        return "small"
    if axis < 32 and n >= 1024:
        return "longcolumn"
    if n > 256 and axis // 32 < 1024:  # out.size() / 32 < 1024
        return "2pass"
    return "looped"


def col_sum_kernels(dt, n, axis):
    t = tname(dt)
    path = col_sum_plan(n, axis)
    looped = f"col_reduce_looped_1_32_32_reduce_sum{t}"
    return {"small": [f"col_reduce_small_1_reduce_sum{t}"],
            "longcolumn": [f"col_reduce_longcolumn_1_reduce_sum{t}", looped],
            "2pass": [f"col_reduce_2pass_1_32_32_reduce_sum{t}", looped],
            "looped": [looped]}[path]


def _col_args(reduction_size, reduction_stride, reduce_shape, reduce_strides):
    """ColReduceArgs::encode with no kept dims (shape/strides pushed as one 0, ndim 0)."""
    return {2: np.uint64(reduction_size), 3: np.int64(reduction_stride), 4: vec([0], np.int32),
            5: vec([0], np.int64), 6: i32(0), 7: vec(reduce_shape, np.int32), 8: vec(reduce_strides, np.int64),
            9: i32(len(reduce_shape)), 10: np.uint64(1)}


def col_sum(ctx, dt, src, n, axis, out):
    """Sums the rows of the row-contiguous (n, axis) array in `src` into `out` (axis values) as MLX's Metal backend
    does: the kernels of reduce.metal, accumulating in `dt` (sum's output type for floats is the input type). The
    output grid over kept dims is (1, 1): every output stride (1) is below reduction_stride and gets dropped."""
    t = tname(dt)
    path = col_sum_plan(n, axis)
    if path == "small":
        blocks = ceildiv(axis, 4)
        tgx = min(blocks, 32)
        tgy = min(8, min(MAX_THREADS // tgx, n))
        launch_other(ctx, REDUCE, f"col_reduce_small_1_reduce_sum{t}",
                     {0: src, 1: out, **_col_args(n, axis, [n], [axis])},
                     groups=(ceildiv(blocks, tgx), 1, 1), threadgroup=(tgx, tgy, 1))
        return
    looped = f"col_reduce_looped_1_32_32_reduce_sum{t}"
    if path == "looped":
        launch_other(ctx, REDUCE, looped, {0: src, 1: out, **_col_args(n, axis, [n], [axis])},
                     grid=(256 * ceildiv(axis, 32), 1, 1), threadgroup=(256, 1, 1))
        return
    if path == "longcolumn":
        outer = 128 if n >= 32768 else 32
        inter = ctx.empty(outer * axis * itemsize(dt))
        tgy = min(32, ceildiv(n, outer))
        launch_other(ctx, REDUCE, f"col_reduce_longcolumn_1_reduce_sum{t}",
                     {0: src, 1: inter, **_col_args(n, axis, [n], [axis]), 11: np.uint64(axis)},
                     groups=(1, 1, outer), threadgroup=(axis, tgy, 1))
    else:  # 2pass: 32 outer blocks, out_size = out.size() / reduction_stride = 1
        outer = 32
        inter = ctx.empty(outer * axis * itemsize(dt))
        launch_other(ctx, REDUCE, f"col_reduce_2pass_1_32_32_reduce_sum{t}",
                     {0: src, 1: inter, **_col_args(n, axis, [n], [axis]), 11: np.uint64(1)},
                     grid=(256 * ceildiv(axis, 32), outer, 1), threadgroup=(256, 1, 1))
    # Second pass: the (outer, axis) intermediate reduced over its first axis by col_reduce_looped.
    launch_other(ctx, REDUCE, looped, {0: inter, 1: out, **_col_args(outer, axis, [outer], [axis])},
                 grid=(256 * ceildiv(axis, 32), 1, 1), threadgroup=(256, 1, 1))
