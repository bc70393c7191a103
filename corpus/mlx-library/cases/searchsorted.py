"""searchsorted (searchsorted.metal), launched as SearchSorted::eval_gpu (mlx/backend/metal/sort.cpp) launches it:
`searchsorted_<type>_left|right` with the 1-D sorted sequence (its stride as int64, its length as uint32), the
row-contiguous values (MLX copies non-contiguous values with copy.metal first; the cases here pass row-contiguous
ones) and a uint32 output of the values' shape, on the output's 2-D grid in threadgroups of
min(1024, output size) threads. Ordering is LessThan's: NaN after every number."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _reduce_util import grid_2d  # noqa: E402
from mlxhost import row_strides  # noqa: E402
from mlxrun import MAX_THREADS, Case, tname  # noqa: E402

FILE = "searchsorted.metal"


def kernel_name(dt, right):
    return f"searchsorted_{tname(dt)}_{'right' if right else 'left'}"


def launch_searchsorted(ctx, dt, a_buf, a_len, a_stride, v_buf, v_shape, out, right):
    n_out = int(np.prod(v_shape))
    tg = min(MAX_THREADS, n_out)
    gw, gh, _ = grid_2d(v_shape, row_strides(v_shape))
    ctx.launch(kernel_name(dt, right), {0: a_buf, 1: v_buf, 2: out, 3: np.uint32(a_len), 4: np.int64(a_stride)},
               grid=(gw, gh), threadgroup=(tg,))


def ss_case(dt, n, v_shape, right, a_stride=1, ties=False, nans=False, note=""):
    def run(ctx):
        rng = ctx.rng
        if ties or dt == "i32":
            lo, hi = (-30, 30) if ties else (-10 ** 6, 10 ** 6)
            a = np.sort(rng.integers(lo, hi + 1, n)).astype(np.float64)
            v = rng.integers(lo - 2, hi + 3, int(np.prod(v_shape))).astype(np.float64)
        else:
            a = np.sort(rng.uniform(-10, 10, n))
            v = rng.uniform(-11, 11, int(np.prod(v_shape)))
            # some values equal to elements of a, where left and right differ
            pick = rng.random(v.size) < 0.25
            v[pick] = a[rng.integers(0, n, int(pick.sum()))]
        if nans:
            a[-max(1, n // 20):] = np.nan  # NaNs sort last
            v[rng.random(v.size) < 0.1] = np.nan
        # the sequence lives every a_stride elements of its buffer (a slice a[::a_stride] of a longer array)
        base = rng.uniform(-1000, 1000, n * a_stride)
        base[::a_stride] = a
        a_buf, a_stored = ctx.upload(base, dt)
        a_seq = np.asarray(a_stored)[::a_stride]
        v_buf, v_stored = ctx.upload(v.reshape(v_shape), dt)
        n_out = v.size
        out = ctx.empty(n_out * 4)
        launch_searchsorted(ctx, dt, a_buf, n, a_stride, v_buf, v_shape, out, right)
        want = np.searchsorted(np.asarray(a_seq, np.float64) if dt != "i32" else a_seq,
                               np.asarray(v_stored).reshape(-1), side="right" if right else "left")
        got = ctx.read(out, "u32", n_out)
        ctx.check_exact("out", got, want.astype(np.uint32))

    side = "right" if right else "left"
    extra = ("_strided" if a_stride != 1 else "") + ("_ties" if ties else "") + ("_nan" if nans else "")
    return Case(f"searchsorted.{side}{extra}.{dt}.{n}.{'x'.join(map(str, v_shape))}", "searchsorted", FILE,
                [kernel_name(dt, right)], run, note=note)


def cases():
    yield ss_case("f32", 1000, (7, 33), right=False)
    yield ss_case("f32", 1000, (7, 33), right=True)
    yield ss_case("i32", 77, (2000,), right=False, ties=True, note="runs of equal elements: left/right differ")
    yield ss_case("i32", 77, (2000,), right=True, ties=True)
    yield ss_case("f16", 300, (5, 6, 7), right=True, a_stride=3, note="a strided 1-D sequence (a[::3])")
    yield ss_case("bf16", 129, (1500,), right=False, ties=True)
    yield ss_case("f32", 64, (40, 50), right=False, nans=True, note="NaN values and NaN tail: NaN after numbers")
    yield ss_case("f32", 1, (3,), right=True, note="one-element sequence, 3 values")
