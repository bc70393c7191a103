"""Copies and type conversions (copy.metal), launched as mlx/backend/metal/copy.cpp's copy_gpu_inplace launches them:
Scalar (`s`: one element to every output element, fill_gpu / a broadcast scalar), Vector (`v`: a contiguous source to
a same-layout destination, e.g. astype), General (`g1`/`g2`/`g3`, `gn2` beyond 3 dims: a strided source into a
row-contiguous destination, e.g. making an array contiguous), GeneralGeneral (`gg1`..`gg3`, `ggn2`: strided source
into a strided destination, e.g. slice_update; same type only), and the `_dynamic` GeneralGeneral forms whose element
offsets come from device arrays (dynamic slice updates). Scalar and Vector kernels take 8 bytes' worth of the output
type per thread (`sn`/`vn`) from 2^16 elements on; the general kernels' dims are collapsed over source and
destination strides (size cap 2^31 - 1). Names: kind + `_copy` + input type + output type."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _elemwise_util import View, broadcast, collapse, contiguous, make_input, sliced, transposed  # noqa: E402
from mlxhost import block_dims, ceildiv, row_strides, strided_view, work_per_thread  # noqa: E402
from mlxrun import FLOATS, MAX_THREADS, Case, i32, i64, itemsize, rounded, tname, vec  # noqa: E402

FAMILY = "copy"
INT32_MAX = (1 << 31) - 1


def plan(ctype, in_dt, out_dt, data_shape, strides_in, strides_out, out_data_size, dynamic=False):
    """copy_gpu_inplace's choices: (kernel name, collapsed shape, strides in, strides out, work per thread)."""
    shape, sin, sout = [], [], []
    wpt = 1
    if ctype in ("General", "GeneralGeneral"):
        shape, (sin, sout) = collapse(data_shape, [strides_in, strides_out], INT32_MAX)
        k = "g" if ctype == "General" else "gg"
        if len(shape) <= 3:
            k += str(len(shape))
        else:
            wpt = 2
            k += f"n{wpt}"
        if dynamic:
            k += "_dynamic"
    else:
        k = "s" if ctype == "Scalar" else "v"
        wpt = work_per_thread(itemsize(out_dt), out_data_size)
        if wpt > 1:
            k += "n"
    return f"{k}_copy{tname(in_dt)}{tname(out_dt)}", shape, sin, sout, wpt


def copy_gpu_inplace(ctx, in_dt, out_dt, ibuf, obuf, data_shape, strides_in, strides_out, inp_offset, out_offset,
                     ctype, out_data_size, dyn_in=None, dyn_out=None):
    """Offsets in elements (bound as byte offsets); dyn_in / dyn_out: int64 device buffers of element offsets."""
    dynamic = dyn_in is not None or dyn_out is not None
    name, shape, sin, sout, wpt = plan(ctype, in_dt, out_dt, data_shape, strides_in, strides_out, out_data_size,
                                       dynamic)
    args = {0: (ibuf, inp_offset * itemsize(in_dt)), 1: (obuf, out_offset * itemsize(out_dt))}
    if ctype in ("General", "GeneralGeneral"):
        ndim = len(shape)
        if ndim > 3:
            args[2] = vec(shape, np.int32)
        args[3] = vec(sin, np.int64)
        if ctype == "GeneralGeneral":
            args[4] = vec(sout, np.int64)
        dim0 = shape[-1] if ndim > 0 else 1
        dim1 = shape[-2] if ndim > 1 else 1
        rest = int(np.prod(shape)) // (dim0 * dim1)
        if ndim > 3:
            args[5] = i32(ndim)
            dim0 = ceildiv(dim0, wpt)
        if dynamic:
            args[6] = dyn_in if dyn_in is not None else i64(0)
            args[7] = dyn_out if dyn_out is not None else i64(0)
        ctx.launch(name, args, grid=(dim0, dim1, rest), threadgroup=block_dims(dim0, dim1, rest))
    else:
        nthreads = ceildiv(out_data_size, wpt)
        args[2] = i32(out_data_size)
        ctx.launch(name, args, grid=(nthreads,), threadgroup=(min(MAX_THREADS, nthreads),))
    return name


def convert(values, in_dt, out_dt):
    """What converting stored `in_dt` values to `out_dt` means: float targets round to nearest (even); integer
    targets from floats truncate toward zero; bool is `!= 0`."""
    v = np.asarray(values)
    if out_dt == "bool":
        return v != 0
    if out_dt in FLOATS:
        return rounded(np.asarray(v, dtype=np.float64), out_dt)
    return np.trunc(np.asarray(v, dtype=np.float64)).astype(np.int64)


def check(ctx, got, want, out_dt):
    if out_dt in FLOATS:
        # float -> float conversions round once: bit-exact is the meaning (inf/NaN compare equal by position)
        g, w = np.asarray(got, np.float64), np.asarray(want, np.float64)
        ctx.check_exact("out", np.where(np.isnan(g), np.inf, g), np.where(np.isnan(w), np.inf, w))
    else:
        ctx.check_exact("out", np.asarray(got).astype(np.int64), np.asarray(want).astype(np.int64))


def rng_range(in_dt, out_dt):
    if out_dt == "bool":
        return (0, 2)  # many zeros
    if in_dt in FLOATS and out_dt not in FLOATS:
        return (-100, 100) if out_dt.startswith("i") else (0, 250)
    if in_dt not in FLOATS:
        return (-1000, 1000) if in_dt.startswith("i") else (0, 1000)
    return (-1e4, 1e4) if out_dt != "f16" else (-6e4, 6e4)


def contiguous_case(kind, in_dt, out_dt, src, label):
    """Scalar / Vector copies: `src` one element (Scalar, broadcast to its shape) or contiguous (Vector); the output
    takes the source's layout (a Vector copy of a column-major array stays column-major)."""
    ctype = "Scalar" if kind == "s" else "Vector"
    if ctype == "Scalar":
        out = contiguous(src.shape)
    else:
        out = View(src.shape, src.strides, 0, data_size=src.data_size)
    name = plan(ctype, in_dt, out_dt, [], [], [], out.data_size)[0]
    lo, hi = rng_range(in_dt, out_dt)

    def run(ctx):
        ibuf, base, sv = make_input(ctx, src, in_dt, lo, hi)
        obuf = ctx.empty(out.extent * itemsize(out_dt))
        copy_gpu_inplace(ctx, in_dt, out_dt, ibuf, obuf, [], [], [], src.offset, 0, ctype, out.data_size)
        got = out.values(ctx.read(obuf, out_dt, out.extent))
        check(ctx, got, convert(sv, in_dt, out_dt), out_dt)

    return Case(f"copy.{label}.{in_dt}_{out_dt}.{'x'.join(map(str, src.shape))}", FAMILY, "copy.metal", [name], run,
                note=ctype)


def general_case(in_dt, out_dt, src, label):
    """General: a strided source into a fresh row-contiguous destination (copy_gpu with CopyType::General)."""
    out_strides = row_strides(src.shape)
    name = plan("General", in_dt, out_dt, src.shape, src.strides, out_strides, src.size)[0]
    lo, hi = rng_range(in_dt, out_dt)

    def run(ctx):
        ibuf, base, sv = make_input(ctx, src, in_dt, lo, hi)
        obuf = ctx.empty(src.size * itemsize(out_dt))
        copy_gpu_inplace(ctx, in_dt, out_dt, ibuf, obuf, src.shape, src.strides, out_strides, src.offset, 0,
                         "General", src.size)
        got = ctx.read(obuf, out_dt, src.size)
        check(ctx, got, convert(sv, in_dt, out_dt).reshape(-1), out_dt)

    return Case(f"copy.{label}.{in_dt}_{out_dt}.{'x'.join(map(str, src.shape))}", FAMILY, "copy.metal", [name], run,
                note="General")


def slice_update_case(dt, src, dst_shape, starts, steps, label, dynamic=None):
    """GeneralGeneral: writes `src` (strided) into dst[starts::steps] of a row-contiguous `dst_shape` array, the rest
    of the destination untouched (slice_update). dynamic: "out" (the destination offset from a device int64) or
    "in" (a source element offset from a device int64, the destination offset then static)."""
    rs = row_strides(dst_shape)
    out_off = sum(s * r for s, r in zip(starts, rs))
    out_strides = [r * st for r, st in zip(rs, steps)]
    name = plan("GeneralGeneral", dt, dt, src.shape, src.strides, out_strides, 0, dynamic is not None)[0]
    dst_size = int(np.prod(dst_shape))

    def run(ctx):
        lo, hi = rng_range(dt, dt)
        ibuf, base, sv = make_input(ctx, src, dt, lo, hi)
        obuf, dst0 = ctx.upload(ctx.rng.uniform(lo, hi, dst_size) if dt in FLOATS
                                else ctx.rng.integers(lo, hi, dst_size), dt)
        want = np.array(dst0, copy=True)
        idx = strided_view(np.arange(dst_size), src.shape, out_strides, out_off)
        want[idx.reshape(-1)] = np.asarray(sv).reshape(-1)
        if dynamic == "out":
            dyn = ctx.buffer(np.array([out_off], np.int64))
            copy_gpu_inplace(ctx, dt, dt, ibuf, obuf, src.shape, src.strides, out_strides, src.offset, 0,
                             "GeneralGeneral", 0, dyn_out=dyn)
        elif dynamic == "in":
            dyn = ctx.buffer(np.array([src.offset], np.int64))
            copy_gpu_inplace(ctx, dt, dt, ibuf, obuf, src.shape, src.strides, out_strides, 0, out_off,
                             "GeneralGeneral", 0, dyn_in=dyn)
        else:
            copy_gpu_inplace(ctx, dt, dt, ibuf, obuf, src.shape, src.strides, out_strides, src.offset, out_off,
                             "GeneralGeneral", 0)
        got = ctx.read(obuf, dt, dst_size)
        check(ctx, got, want, dt)

    return Case(f"copy.{label}.{dt}_{dt}.{'x'.join(map(str, src.shape))}", FAMILY, "copy.metal", [name], run,
                note="GeneralGeneral" + (" dynamic" if dynamic else ""))


def cases():
    C = contiguous
    one = lambda shape: View(shape, [0] * len(shape), data_size=1)  # noqa: E731
    # Scalar: fill from one element, small (s) and >= 2^16 (sn, 4 f16 per thread), with a conversion
    yield contiguous_case("s", "f32", "f32", one([1000]), "s")
    yield contiguous_case("s", "f32", "f16", one([300, 301]), "sn")
    # Vector: astype of contiguous arrays
    yield contiguous_case("v", "f32", "f16", C([1003]), "v")
    yield contiguous_case("v", "f32", "f16", C([257, 259]), "vn")
    yield contiguous_case("v", "f16", "bf16", C([70001]), "vn")
    yield contiguous_case("v", "i32", "f32", C([4097]), "v")
    yield contiguous_case("v", "f32", "i32", C([65537]), "vn")
    yield contiguous_case("v", "f32", "bf16", sliced([50, 40], [7, 0], [1, 1], [20, 40]), "v_offset")
    yield contiguous_case("v", "bf16", "f32", transposed([129, 67], [1, 0]), "v_colmajor")
    yield contiguous_case("v", "u8", "bool", C([70000]), "vn")
    # General: strided sources into contiguous destinations
    yield general_case("f32", "f16", sliced([4001], [3], [2], [1999]), "g1")
    yield general_case("f32", "bf16", transposed([129, 67], [1, 0]), "g2")
    yield general_case("f16", "f32", transposed([13, 17, 19], [2, 1, 0]), "g3")
    yield general_case("f32", "f32", broadcast([1, 33], [45, 33]), "g2_bcast")
    yield general_case("i32", "f32", transposed([5, 6, 7, 9], [3, 1, 0, 2]), "gn2")
    yield general_case("bf16", "bf16", sliced([3, 8, 5, 6, 11], [1, 0, 1, 0, 2], [1, 2, 1, 1, 3], [2, 4, 4, 6, 3],
                                              perm=[0, 2, 1, 4, 3]), "gn2_sliced")
    # collapsing: a row slice of a 3-D array (rows contiguous) is a 2-D copy
    yield general_case("f16", "f16", sliced([7, 40, 30], [2, 0, 0], [1, 2, 1], [4, 20, 30]), "g_collapse")
    # GeneralGeneral (slice update): strided source into a strided region of a bigger array
    yield slice_update_case("f32", C([100]), [400], [7], [3], "gg1")
    yield slice_update_case("f16", transposed([20, 30], [1, 0]), [40, 50], [3, 5], [1, 1], "gg2")
    yield slice_update_case("i32", transposed([6, 7, 8], [1, 2, 0]), [10, 20, 9], [1, 2, 0], [1, 2, 1], "gg3")
    yield slice_update_case("bf16", transposed([3, 4, 5, 6], [0, 3, 1, 2]), [5, 7, 5, 12], [1, 1, 0, 1],
                            [1, 1, 1, 2], "ggn2")
    # dynamic offsets (device int64 element offsets)
    yield slice_update_case("f32", transposed([20, 30], [1, 0]), [40, 50], [6, 9], [1, 1], "gg2_dynamic_out",
                            dynamic="out")
    # dynamic slice: the source offset from a device int64, into a fresh contiguous array
    yield slice_update_case("f32", sliced([50, 40], [3, 2], [1, 1], [30, 20]), [30, 20], [0, 0], [1, 1],
                            "gg2_dynamic_in", dynamic="in")
    yield slice_update_case("i32", transposed([3, 4, 5, 6], [2, 0, 3, 1]), [8, 3, 6, 4], [2, 0, 0, 0],
                            [1, 1, 1, 1], "ggn2_dynamic", dynamic="out")
