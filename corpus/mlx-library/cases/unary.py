"""Unary elementwise ops (unary.metal), launched as mlx/backend/metal/unary.cpp launches them. The kernel follows
the input's MLX `contiguous` flag (no holes in the span it covers; any order, broadcasts included): contiguous inputs
run `v` (one element per thread) or `vn` (from 2^16 elements on: 8 bytes' worth per thread) over data_size elements,
and the output takes the input's layout (set_unary_output_data), so a transposed input gives a transposed output;
inputs with holes (slices) run `gn1`: collapsed dims, shape/strides/ndim as setBytes, a 3-D grid in block_dims
threadgroups, into a row-contiguous output."""
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _elemwise_util import View, boff, collapse, contiguous, make_input, output_values, shape_label, sliced, transposed  # noqa: E402,E501
from mlxhost import block_dims, ceildiv, work_per_thread  # noqa: E402
from mlxrun import MAX_THREADS, Case, i32, itemsize, tname, vec  # noqa: E402

FILE = "unary.metal"

OPS = {
    "Exp": (np.exp, -4, 4),
    "Sigmoid": (lambda x: 1 / (1 + np.exp(-x)), -8, 8),
    "Sqrt": (np.sqrt, 0, 100),
    "Log1p": (np.log1p, -0.9, 10),
    "Erf": (np.vectorize(math.erf), -3, 3),
    "Tanh": (np.tanh, -5, 5),
    "Negative": (np.negative, -100, 100),
    "Abs": (np.abs, -100, 100),
}


def plan(op, dt, src):
    """(kernel name, output view, collapsed shape, strides) as unary_op_gpu picks them."""
    if src.contiguous:
        wpt = work_per_thread(itemsize(dt), src.data_size)
        out = View(src.shape, src.strides, 0, data_size=src.data_size)
        return f"{'vn' if wpt > 1 else 'v'}_{op}{tname(dt)}{tname(dt)}", out, [], [], wpt
    shape, (strides,) = collapse(src.shape, [src.strides])
    return f"gn1_{op}{tname(dt)}{tname(dt)}", contiguous(src.shape), shape, strides, 1


def launch_unary(ctx, op, dt, src, sbuf, obuf):
    """unary_op_gpu_inplace."""
    name, out, shape, strides, wpt = plan(op, dt, src)
    args = {0: (sbuf, boff(src, dt)), 1: obuf}
    if src.contiguous:
        nthreads = ceildiv(src.data_size, wpt)
        args[2] = i32(src.data_size)
        ctx.launch(name, args, grid=(nthreads,), threadgroup=(min(MAX_THREADS, nthreads),))
        return out
    ndim = len(shape)
    dim0 = shape[-1]
    dim1 = shape[-2] if ndim > 1 else 1
    rest = src.size // (dim0 * dim1)
    args.update({2: vec(shape, np.int32), 3: vec(strides, np.int64), 4: i32(ndim)})
    ctx.launch(name, args, grid=(dim0, dim1, rest), threadgroup=block_dims(dim0, dim1, rest))
    return out


def unary_case(op, dt, src, label):
    fn, lo, hi = OPS[op]
    name, out, *_ = plan(op, dt, src)

    def run(ctx):
        sbuf, _, xv = make_input(ctx, src, dt, lo, hi)
        obuf = ctx.empty(out.extent * itemsize(dt))
        launch_unary(ctx, op, dt, src, sbuf, obuf)
        got = output_values(ctx, obuf, out, dt)
        ctx.check("out", got, fn(np.asarray(xv, dtype=np.float64)), dt=dt)

    return Case(f"unary.{op}.{label}.{dt}.{shape_label(src.shape)}", "unary", FILE, [name], run)


def cases():
    C = contiguous
    for dt in ("f32", "f16", "bf16"):
        yield unary_case("Exp", dt, C([1000]), "contiguous")
        yield unary_case("Sigmoid", dt, C([300, 301]), "contiguous")          # >= 2^16 elements: the vn kernel
        # a 3-D slice (holes): gn1 over the collapsed dims
        yield unary_case("Tanh", dt, sliced([33, 17, 20], [0, 1, 3], [1, 1, 2], [33, 16, 9], perm=[2, 0, 1]), "strided")
    yield unary_case("Sqrt", "f32", C([4097]), "contiguous")
    # a row slice: contiguous, at an offset into its buffer (bound at that byte offset)
    yield unary_case("Exp", "f16", sliced([50, 40], [7, 0], [1, 1], [20, 40]), "rowslice")
    yield unary_case("Log1p", "f32", C([513, 130]), "contiguous")
    # Erf: the same op contiguous and through a sliced, transposed view (gn1): both go through erf.h's expm1f,
    # whose round-to-integer step (x * log2(e) + 1.5 * 2^23 - 1.5 * 2^23) must not be reassociated
    yield unary_case("Erf", "f32", C([7217]), "contiguous")
    yield unary_case("Erf", "f32", sliced([1031, 14], [0, 0], [1, 2], [1031, 7], perm=[1, 0]), "strided")
    # a transposed input is contiguous to MLX (no holes): the v kernel, the output transposed like the input
    yield unary_case("Tanh", "f32", transposed([33, 17, 9], [2, 0, 1]), "transposed")
    yield unary_case("Negative", "i32", C([100000]), "contiguous")
    yield unary_case("Abs", "i32", sliced([64, 33, 10], [0, 0, 1], [1, 1, 2], [64, 33, 5], perm=[1, 2, 0]), "strided")
