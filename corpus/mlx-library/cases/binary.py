"""Binary elementwise ops (binary.metal, and binary_two.metal for DivMod's two outputs), launched as
mlx/backend/metal/binary.cpp launches them. The op type comes from the inputs' MLX layout (get_binary_op_type):
ss (both one element), sv / vs (one side one element, the other contiguous: no holes, any order, broadcasts
included), vv (both row- or both column-contiguous), else general: dims collapsed over a, b and the row-contiguous
output, g1/g2/g3 for up to 3 dims (strides only), gn2 beyond (shape, strides, ndim; 2 elements per thread along the
last dim). Contiguous kernels take 8 bytes' worth per thread (the `n` forms) from 2^16 elements on; their output
takes the layout of the vector input (set_binary_op_output_data), so a column-major or broadcast input gives a
column-major or broadcast output, checked through that layout."""
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _elemwise_util import (View, shape_label, boff, broadcast, collapse, contiguous, make_input, output_values,  # noqa: E402
                            sliced, transposed)
from mlxhost import block_dims, ceildiv, work_per_thread  # noqa: E402
from mlxrun import MAX_THREADS, FLOATS, Case, i32, itemsize, tname, vec  # noqa: E402

FAMILY = "binary"


def op_type(a, b):
    """get_binary_op_type."""
    if a.data_size == 1 and b.data_size == 1:
        return "ss"
    if a.data_size == 1 and b.contiguous:
        return "sv"
    if b.data_size == 1 and a.contiguous:
        return "vs"
    if (a.row_contiguous and b.row_contiguous) or (a.col_contiguous and b.col_contiguous):
        return "vv"
    return "g"


def output_view(bopt, a, b, out_shape):
    """set_binary_op_output_data without donation: the output's layout."""
    if bopt == "ss":
        return View(out_shape, a.strides, 0, data_size=1)
    if bopt == "sv":
        return View(out_shape, b.strides, 0, data_size=b.data_size)
    if bopt in ("vs", "vv"):
        return View(out_shape, a.strides, 0, data_size=a.data_size)
    return contiguous(out_shape)


def kernel_name(bopt, op, dt, ndim, wpt):
    """get_kernel_name (never `large` here: that takes > 2^31 elements)."""
    if bopt == "g":
        k = f"g{ndim}" if ndim <= 3 else f"gn{wpt}"
    else:
        k = bopt + ("n" if (bopt != "ss" and wpt > 1) else "")
    return f"{k}_{op}{tname(dt)}"


def plan(op, a, b, dt):
    """(kernel name, op type, output view, collapsed shape/strides) as binary_op_gpu picks them."""
    bopt = op_type(a, b)
    out = output_view(bopt, a, b, a.shape)
    shape, sa, sb = [], [], []
    if bopt == "g":
        shape, (sa, sb, _) = collapse(a.shape, [a.strides, b.strides, out.strides])
        wpt = 2
    else:
        wpt = work_per_thread(itemsize(dt), out.data_size)
    return kernel_name(bopt, op, dt, len(shape), wpt), bopt, out, (shape, sa, sb, wpt)


def launch_binary(ctx, op, dt, a, abuf, b, bbuf, outs, out_dts):
    """binary_op_gpu_inplace: `outs` are the output buffers (two for DivMod), laid out as plan() says."""
    name, bopt, out, (shape, sa, sb, wpt) = plan(op, a, b, dt)
    args = {0: (abuf, boff(a, dt)), 1: (bbuf, boff(b, dt))}
    idx = 2
    for o in outs:
        args[idx] = o
        idx += 1
    if bopt == "g":
        ndim = len(shape)
        dim0 = shape[-1]
        dim1 = shape[-2] if ndim > 1 else 1
        rest = a.size // (dim0 * dim1)
        if ndim > 3:
            args[idx] = vec(shape, np.int32)
            args[idx + 1] = vec(sa, np.int64)
            args[idx + 2] = vec(sb, np.int64)
            args[idx + 3] = i32(ndim)
            dim0 = ceildiv(dim0, wpt)
        else:
            args[idx] = vec(sa, np.int64)
            args[idx + 1] = vec(sb, np.int64)
        ctx.launch(name, args, grid=(dim0, dim1, rest), threadgroup=block_dims(dim0, dim1, rest))
    else:
        nthreads = ceildiv(out.data_size, wpt)
        args[idx] = i32(out.data_size)
        ctx.launch(name, args, grid=(nthreads,), threadgroup=(min(MAX_THREADS, nthreads),))
    return out


# --- references: what each op means, in float64 (or exactly for integers) ---
def _maximum(x, y):
    return np.maximum(x, y)  # NaN on either side gives NaN (MLX's float Maximum too)


def _int_pow(x, y):
    return np.power(x.astype(np.int64), y.astype(np.int64))


def _py_mod(x, y):  # the remainder takes the divisor's sign
    return np.mod(x, y)


OPS = {
    # op: (reference, output kind "same"|"bool", input range for a, for b)
    "Add": (np.add, "same", (-10, 10), (-10, 10)),
    "Subtract": (np.subtract, "same", (-10, 10), (-10, 10)),
    "Multiply": (np.multiply, "same", (-10, 10), (-10, 10)),
    "Divide": (np.divide, "same", (-10, 10), (0.5, 4)),
    "Maximum": (_maximum, "same", (-5, 5), (-5, 5)),
    "Minimum": (np.minimum, "same", (-5, 5), (-5, 5)),
    "Power": (np.power, "same", (0.1, 3), (-2, 2)),
    "Remainder": (_py_mod, "same", (-50, 50), (1, 7)),
    "PowerInt": (_int_pow, "same", (-5, 5), (0, 6)),  # integer power by squaring; 5^6 fits int32
    "RemainderLarge": (_py_mod, "same", (-1e4, 1e4), (1, 7)),  # quotients up to 10^4
    "LogAddExp": (np.logaddexp, "same", (-20, 20), (-20, 20)),
    "Greater": (np.greater, "bool", (-3, 3), (-3, 3)),
    "LessEqual": (np.less_equal, "bool", (-3, 3), (-3, 3)),
    "Equal": (np.equal, "bool", (-3, 3), (-3, 3)),
}


def binary_case(op, dt, a_view, b_view, label, neg_divisor=False, nans=False, ref=None):
    fn, kind, (alo, ahi), (blo, bhi) = OPS[ref or op]
    out_dt = "bool" if kind == "bool" else dt
    name, bopt, out, _ = plan(op, a_view, b_view, dt)

    def run(ctx):
        abuf, abase, av = make_input(ctx, a_view, dt, alo, ahi)
        if neg_divisor:  # divisors of either sign, never zero
            mag = ctx.rng.integers(1, 8, size=b_view.extent) if dt not in FLOATS else ctx.rng.uniform(0.5, 4, b_view.extent)
            sign = np.where(ctx.rng.integers(0, 2, size=b_view.extent) == 1, 1, -1)
            bbuf, bbase = ctx.upload(mag * sign, dt)
            bv = b_view.values(bbase)
        else:
            bbuf, bbase, bv = make_input(ctx, b_view, dt, blo, bhi)
        if nans:  # a few NaNs on each side: Maximum propagates them from either input
            for buf, base, view, k in ((abuf, abase, a_view, 0), (bbuf, bbase, b_view, 1)):
                if view.extent == 1:
                    continue
                flat = np.array(base, dtype=np.float64)
                pick = ctx.rng.choice(view.extent, size=max(1, view.extent // 50), replace=False)
                flat[pick] = np.nan
                nb, stored = ctx.upload(flat, dt)
                if k == 0:
                    abuf, av = nb, a_view.values(stored)
                else:
                    bbuf, bv = nb, b_view.values(stored)
        obuf = ctx.empty(out.extent * itemsize(out_dt))
        launch_binary(ctx, op, dt, a_view, abuf, b_view, bbuf, [obuf], [out_dt])
        got = output_values(ctx, obuf, out, out_dt)
        if dt in FLOATS:
            want = fn(np.asarray(av, np.float64), np.asarray(bv, np.float64))
        else:
            want = fn(np.asarray(av).astype(np.int64), np.asarray(bv).astype(np.int64))
        if kind == "bool":
            ctx.check_exact("out", got, want)
        elif dt in FLOATS:
            tol = None
            if op == "Power" and dt == "f32":
                tol = 4e-5  # pow's result carries the log's rounding scaled by |exp * log2 base| (up to ~3.2)
            ctx.check("out", got, want, tol=tol, dt=dt)
            if nans:
                ctx.check_exact("nan positions", np.isnan(got), np.isnan(want))
        else:
            ctx.check_exact("out", got, want)

    return Case(f"binary.{op}.{label}.{dt}.{shape_label(a_view.shape)}", FAMILY, "binary.metal", [name], run,
                note=f"{bopt}")


def divmod_case(dt, a_view, b_view, label):
    name, bopt, out, _ = plan("DivMod", a_view, b_view, dt)

    def run(ctx):
        abuf, abase, av = make_input(ctx, a_view, dt, -50, 50)
        n = b_view.extent
        mag = ctx.rng.integers(1, 8, size=n) if dt not in FLOATS else ctx.rng.uniform(0.5, 4, n)
        sign = np.where(ctx.rng.integers(0, 2, size=n) == 1, 1, -1)
        bbuf, bbase = ctx.upload(mag * sign, dt)
        bv = b_view.values(bbase)
        q = ctx.empty(out.extent * itemsize(dt))
        r = ctx.empty(out.extent * itemsize(dt))
        launch_binary(ctx, "DivMod", dt, a_view, abuf, b_view, bbuf, [q, r], [dt, dt])
        gq, gr = output_values(ctx, q, out, dt), output_values(ctx, r, out, dt)
        if dt in FLOATS:
            x, y = np.asarray(av, np.float64), np.asarray(bv, np.float64)
            # the quotient is floor(x / y) with x / y computed in the dtype, which Metal (and Vulkan) allow 2.5 ulp
            # of error: where x / y lies within 3 ulp of an integer the floor may go either way, so those elements
            # are not checked (the H200 gives half -27 / 0.7705 = -35.0, 1.3 ulp from -35.04)
            ratio = x / y
            eps = 3 * {"f32": 2.0 ** -23, "f16": 2.0 ** -10, "bf16": 2.0 ** -7}[dt]
            near = np.abs(ratio - np.round(ratio)) <= eps * np.maximum(1.0, np.abs(ratio))
            ctx.check("quotient", gq, np.where(near, np.nan, np.floor(ratio)), dt=dt)
            ctx.check("remainder", gr, np.mod(x, y), dt=dt)
        else:
            x, y = np.asarray(av).astype(np.int64), np.asarray(bv).astype(np.int64)
            ctx.check_exact("quotient", gq, np.floor_divide(x, y))
            ctx.check_exact("remainder", gr, np.mod(x, y))

    return Case(f"binary.DivMod.{label}.{dt}.{shape_label(a_view.shape)}", FAMILY, "binary_two.metal",
                [name], run, note=bopt)


def cases():
    C = contiguous
    # ss: both inputs one element (0-d)
    yield binary_case("Add", "f32", View([]), View([]), "ss")
    # sv / vs: one side a single element, the other contiguous; the vector side small (v) and >= 2^16 (n forms)
    yield binary_case("Multiply", "f16", View([1000], [0], data_size=1), C([1000]), "sv")
    yield binary_case("Subtract", "bf16", C([77, 13]), View([77, 13], [0, 0], data_size=1), "vs")
    yield binary_case("Maximum", "bf16", View([300, 301], [0, 0], data_size=1), C([300, 301]), "svn", nans=True)
    yield binary_case("Divide", "f32", C([70001]), View([70001], [0], data_size=1), "vsn")
    # sv with a broadcast vector side (a (129,) row seen as (50, 129): contiguous to MLX, 129 elements of data):
    # the kernel walks the 129, the output is the same broadcast
    yield binary_case("Add", "f32", View([50, 129], [0, 0], data_size=1), broadcast([129], [50, 129]), "sv_bcast")
    # vs with a column-major vector side (a transposed array: contiguous, not row-contiguous): the output is
    # column-major too
    yield binary_case("Add", "f32", transposed([130, 517], [1, 0]), View([517, 130], [0, 0], data_size=1), "vsn_colmajor")
    # vv: both row-contiguous, small and >= 2^16 elements; both column-major
    yield binary_case("Add", "f32", C([1000]), C([1000]), "vv")
    # vv on row slices (no holes, an offset into each buffer): bound at the slices' byte offsets
    yield binary_case("Subtract", "f16", sliced([60, 33], [5, 0], [1, 1], [40, 33]),
                      sliced([90, 33], [41, 0], [1, 1], [40, 33]), "vv_offset")
    yield binary_case("Divide", "f16", C([300, 301]), C([300, 301]), "vvn")
    yield binary_case("Minimum", "bf16", C([513, 130]), C([513, 130]), "vvn", nans=False)
    yield binary_case("Multiply", "f32", transposed([33, 40], [1, 0]), transposed([33, 40], [1, 0]), "vv_colmajor")
    yield binary_case("Power", "f32", C([4099]), C([4099]), "vv")
    yield binary_case("LogAddExp", "f16", C([2000]), C([2000]), "vv")
    # comparisons: bool outputs
    yield binary_case("Greater", "f32", C([257, 300]), C([257, 300]), "vvn")
    yield binary_case("LessEqual", "f16", View([999], [0], data_size=1), C([999]), "sv")
    # integers
    yield binary_case("Multiply", "i32", C([100003]), C([100003]), "vvn")
    yield binary_case("Power", "i32", C([2049]), C([2049]), "vv", ref="PowerInt")
    yield binary_case("Remainder", "i32", C([3001]), C([3001]), "vv", neg_divisor=True)
    # float remainder: fmod is exact in Metal, so the result is x mod y to the last bit whatever the quotient
    yield binary_case("Remainder", "f32", C([5000]), C([5000]), "vv_bigquotient", neg_divisor=True, ref="RemainderLarge")
    yield binary_case("Maximum", "i32", C([64, 65]), View([64, 65], [0, 0], data_size=1), "vs")
    # general: g1 (a strided 1-D slice against a contiguous vector)
    yield binary_case("Add", "f32", sliced([2001], [1], [2], [1000]), C([1000]), "g1")
    # g2: a row broadcast along the rows (b is (1, N) -> (M, N))
    yield binary_case("Multiply", "f16", C([97, 129]), broadcast([129], [97, 129]), "g2_bcast")
    yield binary_case("Equal", "i32", C([31, 47]), broadcast([31, 1], [31, 47]), "g2_bcastcol")
    # g3: a 3-D transpose (contiguous but neither row- nor column-major) against a broadcast
    yield binary_case("Subtract", "bf16", transposed([9, 17, 33], [2, 0, 1]), broadcast([9, 1], [33, 9, 17]),
                      "g3")
    yield binary_case("Maximum", "f32", transposed([9, 17, 33], [1, 0, 2]), C([17, 9, 33]), "g3", nans=True)
    # gn2: more than 3 dims left after collapsing (a 4-D transpose with odd last dim; a sliced 5-D view)
    yield binary_case("Add", "f32", transposed([5, 6, 7, 9], [0, 2, 1, 3]), transposed([9, 6, 7, 5], [3, 2, 1, 0]),
                      "gn2")
    yield binary_case("Greater", "bf16", sliced([4, 5, 6, 7, 9], [0, 1, 0, 1, 0], [1, 1, 2, 1, 2], [4, 4, 3, 6, 5]),
                      C([4, 4, 3, 6, 5]), "gn2_sliced")
    yield binary_case("Multiply", "i32", transposed([3, 4, 5, 11], [1, 0, 3, 2]), broadcast([4, 1, 1, 1], [4, 3, 11, 5]),
                      "gn2_bcast")
    # collapsing: a slice whose rows stay contiguous collapses to g2 (not g3)
    yield binary_case("Divide", "f32", sliced([6, 40, 20], [1, 0, 0], [1, 2, 1], [5, 20, 20]), C([5, 20, 20]),
                      "g_collapse")
    # DivMod (binary_two.metal): floor quotient and the divisor-signed remainder, two outputs
    yield divmod_case("f32", C([70000]), C([70000]), "vvn")
    yield divmod_case("i32", C([1000]), View([1000], [0], data_size=1), "vs")
    yield divmod_case("i32", transposed([37, 29], [1, 0]), C([29, 37]), "g2")
    yield divmod_case("f16", C([45, 46]), broadcast([46], [45, 46]), "g2_bcast")
