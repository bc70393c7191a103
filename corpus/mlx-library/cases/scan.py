"""Scans (scan.metal: cumsum, cumprod, cummax, cummin; inclusive/exclusive, forward/reverse), launched as
scan_gpu_inplace (mlx/backend/metal/scan.cpp) launches them. Scan::eval_gpu keeps a contiguous input as it is and
gives the output the input's strides (a transposed input stays transposed), then: when the scanned axis has stride
1, contig_scan_* with one threadgroup per row (32 threads per 128 elements up to 4096 elements, half that up to
8192, else 1024 threads looping over the row) on the input's 2-D grid divided by the axis size; otherwise
strided_scan_* with 256 threads per 32 columns (stride and stride blocks as size_t) on the grid divided by
axis size * stride, its x widened by the stride blocks."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _reduce_util import View, check_scaled, grid_2d  # noqa: E402
from mlxhost import ceildiv  # noqa: E402
from mlxrun import MAX_THREADS, Case, itemsize, tname  # noqa: E402

FILE = "scan.metal"
UINT_MAX = (1 << 32) - 1


def out_dtype(op, dt):
    """cumsum of bool counts into int32; every other scan keeps the input type."""
    return "i32" if (op == "sum" and dt == "bool") else dt


def kernel_name(op, dt, contiguous, reverse, inclusive):
    return (f"{'contig' if contiguous else 'strided'}_scan_{'reverse_' if reverse else ''}"
            f"{'inclusive' if inclusive else 'exclusive'}_{op}_{tname(dt)}_{tname(out_dtype(op, dt))}")


def launch_scan(ctx, op, dt, src, out, view, axis, reverse, inclusive):
    contiguous = view.strides[axis] == 1
    name = kernel_name(op, dt, contiguous, reverse, inclusive)
    size = view.shape[axis]
    n_reads = 4 if itemsize(dt) <= 4 else 2
    args = {0: src, 1: out, 2: np.uint64(size)}
    if contiguous:
        per_simd = n_reads * 32
        tg = MAX_THREADS
        if size <= n_reads * 1024:
            tg = ceildiv(size, per_simd) * 32
        elif size <= n_reads * 2048:
            tg = ceildiv(size // 2, per_simd) * 32
        tg = min(tg, MAX_THREADS)
        gw, gh, _ = grid_2d(view.shape, view.strides, divisor=size)
        ctx.launch(name, args, grid=(tg, gw, gh), threadgroup=(tg,))
    else:
        stride = view.strides[axis]
        bn = 32
        stride_blocks = ceildiv(stride, bn)
        args.update({3: np.uint64(stride), 4: np.uint64(stride_blocks)})
        tg = (bn // n_reads) * 32
        gw, gh, _ = grid_2d(view.shape, view.strides, divisor=size * stride)
        if gw * stride_blocks <= UINT_MAX:
            gw *= stride_blocks
        else:
            gh *= stride_blocks
        ctx.launch(name, args, grid=(tg, gw, gh), threadgroup=(tg,))
    return name


INIT = {"sum": 0, "prod": 1}


def reference(op, dt, x, axis, reverse, inclusive):
    x = np.moveaxis(np.asarray(x), axis, -1)
    if reverse:
        x = x[..., ::-1]
    if dt in ("i32", "bool"):
        x = x.astype(np.int64)
    if op == "sum":
        y = np.cumsum(x, axis=-1)
    elif op == "logaddexp":
        y = np.logaddexp.accumulate(x, axis=-1)
    elif op == "prod":
        y = np.cumprod(x, axis=-1)
    elif op == "max":
        y = np.maximum.accumulate(x, axis=-1)
    else:
        y = np.minimum.accumulate(x, axis=-1)
    if not inclusive:
        if op in INIT:
            init = INIT[op]
        elif dt == "i32":
            init = -(1 << 31) if op == "max" else (1 << 31) - 1
        else:
            init = -np.inf if op in ("max", "logaddexp") else np.inf
        y = np.concatenate([np.full(y.shape[:-1] + (1,), init, dtype=y.dtype), y[..., :-1]], axis=-1)
    if dt in ("i32", "bool"):
        y = y.astype(np.int32)  # int32 sums and products wrap
    if reverse:
        y = y[..., ::-1]
    return np.moveaxis(y, -1, axis)


def make_values(rng, n, op, dt):
    """Float sums in f16/bf16 use values on a coarse grid (k/8 in [-1, 1] for f16, -1/0/1 for bf16) so every
    prefix the kernel forms is exact; products use signed powers of two (exact while the exponent is in range)."""
    if dt == "bool":
        return rng.random(n) < 0.5
    if op == "logaddexp":
        return rng.uniform(-5, 5, n)
    if op == "sum":
        if dt == "f32":
            return rng.uniform(-1, 1, n)
        if dt == "f16":
            return rng.integers(-8, 9, n) / 8.0
        if dt == "bf16":
            return rng.integers(-1, 2, n).astype(np.float64)
        return rng.integers(-100, 101, n)
    if op == "prod":
        if dt == "i32":
            return rng.choice(np.array([1, 1, 1, -1, 2]), n)
        return rng.choice(np.array([1.0, 1.0, 1.0, 1.0, -1.0, 2.0, 0.5, -2.0, -0.5]), n)
    if dt == "i32":
        return rng.integers(-100000, 100001, n)
    return rng.uniform(-10, 10, n)


def scan_case(op, dt, base_shape, axis, reverse=False, inclusive=True, perm=None, note=""):
    view = View(base_shape, perm)
    axis = axis % len(view.shape)
    contiguous = view.strides[axis] == 1
    name = kernel_name(op, dt, contiguous, reverse, inclusive)

    def run(ctx):
        vals = make_values(ctx.rng, view.size, op, dt)
        if dt == "bool":
            stored = vals.astype(np.bool_)
            src = ctx.buffer(stored)
        else:
            src, stored = ctx.upload(vals, dt)
        odt = out_dtype(op, dt)
        out = ctx.empty(view.size * itemsize(odt))
        launch_scan(ctx, op, dt, src, out, view, axis, reverse, inclusive)
        x = view.values(stored)
        want = reference(op, dt, x, axis, reverse, inclusive)
        got = view.values(ctx.read(out, odt, view.size))  # the output has the input's strides
        if op == "sum" and dt == "f32":
            sq = reference("sum", dt, x.astype(np.float64) ** 2, axis, reverse, inclusive)
            check_scaled(ctx, "out", got.reshape(-1), want.reshape(-1), np.sqrt(sq).reshape(-1), dt)
        elif op == "sum" and dt in ("f16", "bf16"):
            ctx.check("out", got.reshape(-1), want.reshape(-1), dt=dt)  # exact prefixes (see make_values)
        elif op == "logaddexp":
            # each step rounds once (a few ulp for exp/log1p); the map is contracting, so errors do not grow
            # with the length: 4 ulp-ish of the running value, relative to max(1, |value|)
            ctx.check("out", got.reshape(-1), want.reshape(-1), tol={"f32": 2e-6, "f16": 4e-3, "bf16": 3e-2}[dt])
        else:
            ctx.check_exact("out", got.reshape(-1), want.reshape(-1))

    kind = ("contig" if contiguous else "strided") + ("_reverse" if reverse else "") + \
        ("_inclusive" if inclusive else "_exclusive")
    shape_s = "x".join(map(str, view.shape)) + view.tag
    return Case(f"scan.{kind}.{op}.{dt}.{shape_s}.ax{axis}", "scan", FILE, [name], run, note=note)


def cases():
    # contiguous (scanned axis has stride 1)
    yield scan_case("sum", "f32", (8, 1000), 1)
    yield scan_case("sum", "f16", (5, 3000), 1, reverse=True, inclusive=False)
    yield scan_case("prod", "f32", (4, 300), 1)
    yield scan_case("max", "bf16", (3, 10000), 1, reverse=True, note="1024 threads looping 3 times over the row")
    yield scan_case("min", "i32", (16, 5000), 1, inclusive=False, note="4096 < size <= 8192: threads for half")
    yield scan_case("sum", "i32", (12, 700), 0, perm=(1, 0), reverse=True,
                    note="transposed input whose axis 0 has stride 1: contiguous kernel, output transposed too")
    yield scan_case("sum", "f32", (2, 20000), 1, inclusive=False)
    yield scan_case("max", "f32", (7, 37), 1, inclusive=False)
    # strided
    yield scan_case("sum", "f32", (500, 70), 0)
    yield scan_case("max", "f16", (3, 100, 45), 1, reverse=True, inclusive=False)
    yield scan_case("prod", "i32", (4, 50, 33), 1)
    yield scan_case("sum", "bf16", (300, 20), 1, perm=(1, 0), inclusive=False)
    yield scan_case("min", "f32", (1000, 5), 0, reverse=True)
    # logaddexp, and bool counted into int32
    yield scan_case("logaddexp", "f32", (6, 2500), 1)
    yield scan_case("logaddexp", "f16", (40, 3, 37), 0, inclusive=False, reverse=True)
    yield scan_case("sum", "bool", (9, 777), 1, reverse=True, note="bool input, int32 output")
    yield scan_case("sum", "bool", (300, 40), 0, inclusive=False)
