"""Softmax (softmax.metal) and logsumexp (logsumexp.metal) over the last axis, launched as
mlx/backend/metal/softmax.cpp and logsumexp.cpp launch them.

Host logic mirrored (launch_softmax / launch_logsumexp):
- kernel: `block_` for axis sizes up to the looped limit (4096), `looped_` above; softmax adds `precise_` for
  float16/bfloat16 when the op is precise (accumulates in float; the plain f16/bf16 kernels accumulate in the
  storage type).
- block kernels: one threadgroup per row of 32 * ceil(ceil(axis / 4) / 32) threads (4 reads per thread); looped
  kernels: one threadgroup of maxTotalThreadsPerThreadgroup (1024) threads per row. dispatchThreads over
  n_rows * threadgroup threads; buffers in 0, out 1, setBytes(int axis_size) 2.
- input layout: an input that is contiguous with a unit last stride is used as it is, rows in memory order (also a
  permuted-but-dense array; the output then shares its strides); any other input goes through contiguous_copy_gpu
  (a General copy from copy.metal) first, and softmax's output shares that copy's buffer (runs in place).
"""
import numpy as np

from _rowops_util import COPY, copy_general, copy_general_name, need
from mlxhost import ceildiv, row_strides, strided_view, transposed
from mlxrun import MAX_THREADS, Case, i32, itemsize, tname

SOFTMAX_FILE = "softmax.metal"
LSE_FILE = "logsumexp.metal"
LOOPED_LIMIT = 4096  # SOFTMAX_LOOPED_LIMIT and LOGSUMEXP_LOOPED_LIMIT
N_READS = 4  # SOFTMAX_N_READS; logsumexp's n_reads
SIMD = 32


def row_threadgroup(axis_size):
    """Threads per row: enough whole simdgroups for 4 elements a thread, or the pipeline maximum when looped."""
    if axis_size > LOOPED_LIMIT:
        return MAX_THREADS
    return SIMD * ceildiv(ceildiv(axis_size, N_READS), SIMD)


def softmax_name(dt, axis_size, precise):
    name = ("looped_" if axis_size > LOOPED_LIMIT else "block_") + "softmax_"
    if dt != "f32" and precise:
        name += "precise_"
    return name + tname(dt)


def logsumexp_name(dt, axis_size):
    return ("looped_" if axis_size > LOOPED_LIMIT else "block_") + "logsumexp_" + tname(dt)


def launch_softmax(ctx, dt, src, out, axis_size, n_rows, precise=False):
    tg = row_threadgroup(axis_size)
    ctx.launch(softmax_name(dt, axis_size, precise), {0: src, 1: out, 2: i32(axis_size)}, grid=(n_rows * tg,),
               threadgroup=(tg,))


def launch_logsumexp(ctx, dt, src, out, axis_size, n_rows):
    tg = row_threadgroup(axis_size)
    ctx.launch(logsumexp_name(dt, axis_size), {0: src, 1: out, 2: i32(axis_size)}, grid=(n_rows * tg,),
               threadgroup=(tg,))


# --- references (float64, from the definitions) ------------------------------------------------------------------
def softmax_ref(x):
    x = np.asarray(x, dtype=np.float64)
    m = np.max(x, axis=-1, keepdims=True)
    e = np.exp(x - m)
    return e / e.sum(axis=-1, keepdims=True)


def logsumexp_ref(x):
    x = np.asarray(x, dtype=np.float64)
    m = np.max(x, axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        s = np.exp(x - np.where(np.isfinite(m), m, 0)[..., None]).sum(axis=-1)
        return np.where(np.isinf(m), m, m + np.log(s))


# --- softmax ------------------------------------------------------------------------------------------------------
def softmax_tol(dt, precise):
    """Error allowed on softmax * axis_size (values of order 1, so the check is relative). f32 and the precise
    f16/bf16 kernels accumulate in float: the dtype's default. The plain f16/bf16 kernels subtract the max,
    exponentiate and sum in half/bfloat16 (MLX's choice: AccT = T): x - max and exp round, the normalizer is a tree
    sum of `axis` terms in that type, and its reciprocal and the product round again -- a few units of 2^-11 (f16) or
    2^-8 (bf16); an emulation of those roundings in numpy gives at most 1.9e-3 (f16) and 1.5e-2 (bf16) here."""
    if dt == "f32" or precise:
        return None
    return 5e-3 if dt == "f16" else 3e-2


def softmax_case(dt, n_rows, axis, precise=False, layout="contiguous", lo=-2.0, hi=2.0, masked=False):
    """layout: contiguous | permuted (a dense transpose of the leading dims: used as is, rows in memory order) |
    strided (last axis not contiguous: contiguous_copy_gpu first, softmax in place in the copy)."""
    name = softmax_name(dt, axis, precise)
    kind = name.split("_")[0] + ("_precise" if "precise" in name else "")
    variant = kind + ("" if layout == "contiguous" else "_" + layout) + ("_masked" if masked else "") + \
        ("_wide" if hi - lo > 10 else "")
    kernels = [name]
    note = ""
    if layout == "strided":
        cname = copy_general_name(dt, (n_rows, axis), (1, n_rows))
        note = "also launches " + ", ".join(need(COPY, [cname]))
    tol = softmax_tol(dt, precise)
    if not precise and dt != "f32":
        lo, hi = -1.0, 1.0  # keeps x - max in [-2, 0], where half/bfloat16 spacing is finest (see softmax_tol)

    def run(ctx):
        if layout == "permuted":
            a, b = 3, n_rows // 3
            src, base = ctx.rand((a, b, axis), dt, lo, hi)
            rows = base.reshape(n_rows, axis)  # memory order: what the kernel sees and writes
        elif layout == "strided":
            src, base = ctx.rand((axis, n_rows), dt, lo, hi)  # the input is base.T: strides (1, n_rows)
            rows = base.T
        else:
            src, base = ctx.rand((n_rows, axis), dt, lo, hi)
            rows = base
        if masked:  # -inf in every other row's leading third (an attention mask); each row keeps finite values
            vals = np.array(rows, dtype=np.float64)
            vals[::2, : max(1, axis // 3)] = -np.inf
            if layout != "contiguous":
                raise ValueError("masked rows only for the contiguous layout")
            src, rows = ctx.upload(vals, dt)
        nbytes = n_rows * axis * itemsize(dt)
        if layout == "strided":
            tmp = ctx.empty(nbytes)
            copy_general(ctx, dt, src, (n_rows, axis), (1, n_rows), tmp)
            launch_softmax(ctx, dt, tmp, tmp, axis, n_rows, precise)  # out shares the copy's buffer
            out = tmp
        else:
            out = ctx.empty(nbytes)
            launch_softmax(ctx, dt, src, out, axis, n_rows, precise)
        got = ctx.read(out, dt, (n_rows, axis))
        want = softmax_ref(rows)
        ctx.check("softmax*axis", got * axis, want * axis, tol=tol, dt=dt)

    return Case(f"softmax.{variant}.{dt}.{n_rows}x{axis}", "softmax", SOFTMAX_FILE, kernels, run, note)


# --- logsumexp ----------------------------------------------------------------------------------------------------
def logsumexp_case(dt, n_rows, axis, special=False, lo=-3.0, hi=3.0):
    """special: row 0 all -inf (-> -inf), row 1 holds a +inf (-> +inf), row 2 holds large values (max subtraction)."""
    name = logsumexp_name(dt, axis)
    variant = name.split("_")[0] + ("_inf" if special else "")

    def run(ctx):
        src, x = ctx.rand((n_rows, axis), dt, lo, hi)
        if special:
            vals = np.array(x, dtype=np.float64)
            vals[0, :] = -np.inf
            vals[1, axis // 2] = np.inf
            vals[2, :] += 60.0  # without the max shift, exp(60+) would overflow half and lose float precision
            src, x = ctx.upload(vals, dt)
        out = ctx.empty(n_rows * itemsize(dt))
        launch_logsumexp(ctx, dt, src, out, axis, n_rows)
        ctx.check("logsumexp", ctx.read(out, dt, n_rows), logsumexp_ref(x), dt=dt)

    return Case(f"logsumexp.{variant}.{dt}.{n_rows}x{axis}", "logsumexp", LSE_FILE, [name], run)


def cases():
    for dt in ("f32", "f16", "bf16"):
        yield softmax_case(dt, 7, 1000)                       # block: 250 threads' worth -> 256 (8 simdgroups)
        yield softmax_case(dt, 3, 10000)                      # looped: 1024 threads, 3 passes of 4096
    for dt in ("f16", "bf16"):
        yield softmax_case(dt, 5, 777, precise=True)          # block_softmax_precise_
        yield softmax_case(dt, 2, 6001, precise=True)         # looped_softmax_precise_
    yield softmax_case("f32", 33, 1)                          # one element per row: tail branch, 1 simdgroup
    yield softmax_case("f32", 9, 5)                           # 5 elements: second thread partial
    yield softmax_case("f32", 4, 4096)                        # the largest block size: 1024 threads
    yield softmax_case("f32", 3, 4097)                        # just above the looped limit
    yield softmax_case("f32", 6, 129, layout="permuted")      # dense transpose: used as is
    yield softmax_case("f32", 6, 300, layout="strided")       # last axis strided: copy, then in place
    yield softmax_case("f32", 2, 20000, layout="strided")     # copy then looped in place
    yield softmax_case("f32", 8, 515, masked=True)            # -inf entries (exp -> 0)
    yield softmax_case("f32", 4, 8192, masked=True)
    yield softmax_case("f32", 5, 2048, lo=-20.0, hi=20.0)     # peaked rows: max subtraction matters

    for dt in ("f32", "f16", "bf16"):
        yield logsumexp_case(dt, 9, 513)
        yield logsumexp_case(dt, 3, 12289)
    yield logsumexp_case("f32", 40, 1)
    yield logsumexp_case("f32", 4, 4096)
    yield logsumexp_case("f32", 2, 4097)
    yield logsumexp_case("f32", 5, 100, special=True)
    yield logsumexp_case("f32", 4, 9000, special=True)
    yield logsumexp_case("bf16", 3, 64, special=True)
