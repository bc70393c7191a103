"""Select (ternary.metal: out = condition ? x : y), launched as mlx/backend/metal/ternary.cpp launches it. The op
type (get_ternary_op_type): all three row- or all three column-contiguous -> `v`; x a single element with the
condition and y row-contiguous -> `sv`; y a single element -> `vs`; else general: dims collapsed over the condition,
x, y and the row-contiguous output, g1/g2/g3 (strides only) or gn2 (shape, strides, ndim; 2 elements per thread).
Contiguous kernels take 8 bytes' worth of x's type per thread (`n`) from 2^16 elements on. The name carries x's
type; the condition is bool."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _elemwise_util import View, shape_label, boff, broadcast, collapse, contiguous, make_input, output_values, sliced, transposed  # noqa: E402,E501
from mlxhost import block_dims, ceildiv, work_per_thread  # noqa: E402
from mlxrun import MAX_THREADS, FLOATS, Case, i32, itemsize, tname, vec  # noqa: E402

FAMILY = "ternary"


def op_type(a, b, c):
    if a.data_size == 1 and b.data_size == 1 and c.data_size == 1:
        return "sss"
    if (a.row_contiguous and b.row_contiguous and c.row_contiguous) or \
            (a.col_contiguous and b.col_contiguous and c.col_contiguous):
        return "vvv"
    if b.data_size == 1 and a.row_contiguous and c.row_contiguous:
        return "vsv"
    if c.data_size == 1 and a.row_contiguous and b.row_contiguous:
        return "vvs"
    return "g"


def output_view(topt, a, b, c):
    """set_ternary_op_output_data without donation."""
    if topt == "sss":
        return View(a.shape, b.strides, 0, data_size=1)
    if topt == "vvv":
        return View(a.shape, b.strides, 0, data_size=b.data_size)
    return contiguous(a.shape)  # vsv / vvs: row-contiguous inputs, a row-contiguous output; general: fresh


def plan(a, b, c, dt):
    topt = op_type(a, b, c)
    out = output_view(topt, a, b, c)
    if topt == "g":
        shape, strides = collapse(a.shape, [a.strides, b.strides, c.strides, out.strides])
        wpt = 2
        k = f"g{len(shape)}" if len(shape) <= 3 else f"gn{wpt}"
    else:
        shape, strides = [], []
        wpt = work_per_thread(itemsize(dt), out.data_size)
        k = {"vsv": "sv", "vvs": "vs"}.get(topt, "v") + ("n" if wpt > 1 else "")
    return f"{k}_Select{tname(dt)}", topt, out, shape, strides, wpt


def launch_select(ctx, dt, a, abuf, b, bbuf, c, cbuf, obuf):
    name, topt, out, shape, strides, wpt = plan(a, b, c, dt)
    args = {0: (abuf, boff(a, "bool")), 1: (bbuf, boff(b, dt)), 2: (cbuf, boff(c, dt)), 3: obuf}
    if topt == "g":
        ndim = len(shape)
        dim0 = shape[-1]
        dim1 = shape[-2] if ndim > 1 else 1
        rest = a.size // (dim0 * dim1)
        if ndim > 3:
            args.update({4: vec(shape, np.int32), 5: vec(strides[0], np.int64), 6: vec(strides[1], np.int64),
                         7: vec(strides[2], np.int64), 8: i32(ndim)})
            dim0 = ceildiv(dim0, wpt)
        else:
            args.update({4: vec(strides[0], np.int64), 5: vec(strides[1], np.int64), 6: vec(strides[2], np.int64)})
        ctx.launch(name, args, grid=(dim0, dim1, rest), threadgroup=block_dims(dim0, dim1, rest))
    else:
        nthreads = ceildiv(out.data_size, wpt)
        args[4] = i32(out.data_size)
        ctx.launch(name, args, grid=(nthreads,), threadgroup=(min(MAX_THREADS, nthreads),))
    return out


def select_case(dt, a, b, c, label):
    name, topt, out, *_ = plan(a, b, c, dt)

    def run(ctx):
        abuf, _, av = make_input(ctx, a, "bool")
        bbuf, _, bv = make_input(ctx, b, dt, -100, 100)
        cbuf, _, cv = make_input(ctx, c, dt, -100, 100)
        obuf = ctx.empty(out.extent * itemsize(dt))
        launch_select(ctx, dt, a, abuf, b, bbuf, c, cbuf, obuf)
        got = output_values(ctx, obuf, out, dt)
        want = np.where(np.asarray(av, bool), bv, cv)  # a selection: exact in every dtype
        ctx.check_exact("out", got, want)

    return Case(f"ternary.Select.{label}.{dt}.{shape_label(a.shape)}", FAMILY, "ternary.metal", [name], run,
                note=topt)


def cases():
    C = contiguous
    S1 = lambda shape: View(shape, [0] * len(shape), data_size=1)  # noqa: E731  a broadcast single element
    yield select_case("f32", C([1000]), C([1000]), C([1000]), "v")
    yield select_case("f16", C([300, 301]), C([300, 301]), C([300, 301]), "vn")
    yield select_case("i32", transposed([60, 1200], [1, 0]), transposed([60, 1200], [1, 0]),
                      transposed([60, 1200], [1, 0]), "vn_colmajor")
    yield select_case("bf16", C([37, 41]), S1([37, 41]), C([37, 41]), "sv")
    yield select_case("f32", C([70001]), C([70001]), S1([70001]), "vsn")
    yield select_case("f32", View([]), View([]), View([]), "sss")  # one element: the `v` kernel, size 1
    # general: a condition broadcast along the rows (a (M, 1) mask) and along the columns
    yield select_case("f32", broadcast([97, 1], [97, 130]), C([97, 130]), C([97, 130]), "g2_bcastcond")
    yield select_case("f16", broadcast([130], [97, 130]), C([97, 130]), S1([97, 130]), "g2_bcastrow")
    yield select_case("bf16", C([1000]), sliced([3001], [2], [3], [1000]), C([1000]), "g1")
    yield select_case("i32", transposed([7, 9, 11], [2, 0, 1]), C([11, 7, 9]), broadcast([9], [11, 7, 9]), "g3")
    yield select_case("f32", broadcast([5, 1, 7, 1], [5, 6, 7, 9]), transposed([9, 7, 6, 5], [3, 2, 1, 0]),
                      sliced([5, 6, 14, 9], [0, 0, 1, 0], [1, 1, 2, 1], [5, 6, 7, 9]), "gn2")
