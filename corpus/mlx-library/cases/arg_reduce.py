"""ArgMin / ArgMax (arg_reduce.metal), launched as ArgReduce::eval_gpu (mlx/backend/metal/primitives.cpp) launches
them: one threadgroup per output (a multiple of 32 threads, at most 1024, about a quarter of the axis), the input's
shape and strides without the reduced axis plus the output's strides (ndim as size_t), the axis stride and size,
a grid of (threadgroup size, the output's 2-D grid). The input may be any strided array (it is not copied); the
output is a fresh row-contiguous uint32 array with the reduced axis kept as size 1. Ties go to the lowest index
(numpy's argmin/argmax)."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _reduce_util import View, grid_2d  # noqa: E402
from mlxhost import ceildiv, row_strides  # noqa: E402
from mlxrun import MAX_THREADS, Case, tname, vec  # noqa: E402

FILE = "arg_reduce.metal"


def kernel_name(op, dt):
    return f"{op}_{tname(dt)}"


def launch_arg_reduce(ctx, op, dt, src, view, axis, out):
    shape, in_strides = list(view.shape), list(view.strides)
    out_shape = [1 if i == axis else s for i, s in enumerate(shape)]
    out_strides = row_strides(out_shape)
    axis_stride, axis_size = in_strides[axis], shape[axis]
    del out_strides[axis], in_strides[axis], shape[axis]
    ndim = len(shape)
    n_reads, simd = 4, 32
    tg = min(ceildiv(axis_size, n_reads), MAX_THREADS)
    tg = ceildiv(tg, simd) * simd
    gw, gh, _ = grid_2d(out_shape, row_strides(out_shape))
    if ndim == 0:
        args = {2: np.int32(0), 3: np.int64(0), 4: np.int64(0)}
    else:
        args = {2: vec(shape, np.int32), 3: vec(in_strides, np.int64), 4: vec(out_strides, np.int64)}
    args.update({0: src, 1: out, 5: np.uint64(ndim), 6: np.int64(axis_stride), 7: np.uint64(axis_size)})
    ctx.launch(kernel_name(op, dt), args, grid=(tg, gw, gh), threadgroup=(tg,))


def arg_case(op, dt, base_shape, axis, perm=None, ties=False, note=""):
    view = View(base_shape, perm)
    axis = axis % len(view.shape)
    out_size = view.size // view.shape[axis]

    def run(ctx):
        if dt == "i32" or ties:
            vals = ctx.rng.integers(-20, 21, view.size)  # many ties: the lowest index must win
        else:
            vals = ctx.rng.uniform(-100, 100, view.size)
        src, stored = ctx.upload(vals, dt)
        out = ctx.empty(out_size * 4)
        launch_arg_reduce(ctx, op, dt, src, view, axis, out)
        x = view.values(stored)
        want = (np.argmax if op == "argmax" else np.argmin)(x, axis=axis)
        got = ctx.read(out, "u32", out_size)
        ctx.check_exact("out", got, want.reshape(-1).astype(np.uint32))

    shape_s = "x".join(map(str, view.shape)) + view.tag
    return Case(f"arg_reduce.{op}.{dt}.{shape_s}.ax{axis}", "arg_reduce", FILE, [kernel_name(op, dt)], run,
                note=note)


def cases():
    yield arg_case("argmax", "f32", (64, 1000), 1)
    yield arg_case("argmin", "f32", (3001,), 0, note="1-D input: ndim 0, placeholder shape/strides")
    yield arg_case("argmin", "f16", (300, 17), 0, ties=True)
    yield arg_case("argmax", "bf16", (5, 2000, 3), 1, ties=True)
    yield arg_case("argmin", "i32", (33, 5000), 1, note="1024 threads, two passes over the axis")
    yield arg_case("argmax", "i32", (20, 3), 1, note="axis of 3: one simdgroup, most lanes padding")
    yield arg_case("argmax", "f32", (40, 30, 50), 2, perm=(2, 0, 1), note="transposed input, strided axis")
    yield arg_case("argmin", "bf16", (7, 9, 11, 130), 3, perm=(0, 3, 1, 2))
