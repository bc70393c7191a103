"""Unary elementwise ops (unary.metal), launched as mlx/backend/metal/unary.cpp launches them: `v` (contiguous, one
element per thread), `vn` (contiguous from 2^16 elements on: 8 bytes' worth per thread), `gn1` (non-contiguous
input: collapsed dims, shape/strides/ndim as setBytes, a 3-D grid in block_dims threadgroups)."""
import math

import numpy as np

from mlxhost import (block_dims, ceildiv, collapse_contiguous_dims, row_strides, strided_view, transposed,
                     work_per_thread)
from mlxrun import MAX_THREADS, Case, i32, itemsize, tname, vec

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


def launch_unary(ctx, op, dt, src, shape, strides, offset, out, nelem):
    """unary_op_gpu_inplace: contiguous inputs use v/vn with one size argument; others gn1 with shape/strides."""
    contiguous = list(strides) == row_strides(shape)
    if contiguous:
        wpt = work_per_thread(itemsize(dt), nelem)
        name = f"{'vn' if wpt > 1 else 'v'}_{op}{tname(dt)}{tname(dt)}"
        nthreads = ceildiv(nelem, wpt)
        ctx.launch(name, {0: (src, offset * itemsize(dt)), 1: out, 2: i32(nelem)}, grid=(nthreads,),
                   threadgroup=(min(MAX_THREADS, nthreads),))
        return name
    cshape, (cstrides,) = collapse_contiguous_dims(shape, strides)
    ndim = len(cshape)
    name = f"gn1_{op}{tname(dt)}{tname(dt)}"
    dim0 = cshape[-1]
    dim1 = cshape[-2] if ndim > 1 else 1
    rest = nelem // (dim0 * dim1)
    ctx.launch(name, {0: (src, offset * itemsize(dt)), 1: out, 2: vec(cshape, np.int32), 3: vec(cstrides, np.int64),
                      4: i32(ndim)},
               grid=(dim0, dim1, rest), threadgroup=block_dims(dim0, dim1, rest))
    return name


def unary_case(op, dt, base_shape, transpose=None):
    """`transpose`: the input is the base array seen through transpose(perm), so not row-contiguous."""
    fn, lo, hi = OPS[op]
    nelem = int(np.prod(base_shape))
    layout = "strided" if transpose else "contiguous"
    wpt = work_per_thread(itemsize(dt), nelem)
    kname = (f"gn1_{op}{tname(dt)}{tname(dt)}" if transpose else
             f"{'vn' if wpt > 1 else 'v'}_{op}{tname(dt)}{tname(dt)}")

    def run(ctx):
        src, x = ctx.rand(base_shape, dt, lo, hi)
        shape, strides = transposed(base_shape, transpose or range(len(base_shape)))
        xv = strided_view(x, shape, strides)
        out = ctx.empty(nelem * itemsize(dt))
        launch_unary(ctx, op, dt, src, shape, strides, 0, out, nelem)
        got = ctx.read(out, dt, nelem)
        ctx.check("out", got, fn(np.asarray(xv, dtype=np.float64)).reshape(-1), dt=dt)

    return Case(f"unary.{op}.{layout}.{dt}.{'x'.join(map(str, base_shape))}", "unary", FILE, [kname], run)


def cases():
    for dt in ("f32", "f16", "bf16"):
        yield unary_case("Exp", dt, (1000,))
        yield unary_case("Sigmoid", dt, (300, 301))          # >= 2^16 elements: the vn kernel
        yield unary_case("Tanh", dt, (33, 17, 9), transpose=(2, 0, 1))
    yield unary_case("Sqrt", "f32", (4097,))
    yield unary_case("Log1p", "f32", (513, 130))
    yield unary_case("Erf", "f32", (7, 1031), transpose=(1, 0))
    yield unary_case("Negative", "i32", (100000,))
    yield unary_case("Abs", "i32", (64, 33, 5), transpose=(1, 2, 0))
