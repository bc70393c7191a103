"""Layer norm (layer_norm.metal) and RMS norm (rms_norm.metal), forward and VJP, launched as
mlx/backend/metal/normalization.cpp launches them.

Host logic mirrored:
- forward: `layer_norm{T}` up to an axis of 6656 (8 reads per thread), `layer_norm_looped{T}` above (4 reads);
  `rms{T}` up to 4096 (RMS_LOOPED_LIMIT, 4 reads), `rms_looped{T}` above. Single-row kernels: one threadgroup per
  row of 32 * ceil(ceil(axis / n_reads) / 32) threads; looped: 1024 threads per row. Weight and bias are MLX's
  `passed_weight`/`passed_bias`: without a weight a scalar 1 (ndim 0, so w_stride 0), without a bias a scalar 0;
  a 1-D weight passes its own stride (a strided view keeps it: astype to the same type is the array itself).
  setBytes: eps (float), axis_size, w_stride (and b_stride) as uint32.
- input layout: contiguous rows are used as they are; otherwise contiguous_copy_gpu (copy.metal) and the output
  shares the copy's buffer (the kernel runs in place).
- LayerNormVJP: (1) with a 1-D bias, gb = the column sum of g (strided_reduce_general_dispatch, reduce.metal) --
  first, since gx may overwrite g; (2) `vjp_layer_norm{T}` (looped above 8192) with function constant has_w (20),
  writing gx and the per-row weight gradients into gw_temp (n_rows x axis); (3) with a weight, gw = the column sum
  of gw_temp. Donation: gx reuses x's buffer when x is donatable, else g's; gw_temp reuses g's when g is donatable
  and not already holding gx.
- RMSNormVJP: `vjp_rms{T}` groups rows: rows_per_group = ceil(n_rows / 512) (single-row kernel only), one
  threadgroup per group accumulating its rows' weight gradients in registers, gw_temp is n_groups x axis, and
  setBytes n_rows (8) and rows_per_group (9); `vjp_rms_looped{T}` above 4096 (one row per threadgroup, no 8/9). Then
  gw = the column sum of gw_temp over its n_groups rows.
The column sums launch MLX's own reduce kernels (see _rowops_util.col_sum: small / longcolumn / 2pass / looped
paths, summing in the gradient's dtype as MLX does).
"""
import numpy as np

from _rowops_util import COPY, REDUCE, col_sum, col_sum_kernels, copy_general, copy_general_name, need
from mlxhost import ceildiv
from mlxrun import MAX_THREADS, Case, f32, itemsize, tname, u32

LN_FILE = "layer_norm.metal"
RMS_FILE = "rms_norm.metal"
SIMD = 32
EPS = 1e-5


def single_row_threadgroup(axis, n_reads):
    return SIMD * ceildiv(ceildiv(axis, n_reads), SIMD)


# --- launchers ------------------------------------------------------------------------------------------------------
def ln_name(dt, axis, vjp=False):
    looped = axis > (8192 if vjp else 6656)
    return ("vjp_" if vjp else "") + "layer_norm" + ("_looped" if looped else "") + tname(dt)


def rms_name(dt, axis, vjp=False):
    return ("vjp_" if vjp else "") + "rms" + ("_looped" if axis > 4096 else "") + tname(dt)


def launch_layer_norm(ctx, dt, x, w, b, out, axis, n_rows, w_stride, b_stride, eps=EPS):
    looped = axis > 6656
    tg = MAX_THREADS if looped else single_row_threadgroup(axis, 8)
    ctx.launch(ln_name(dt, axis), {0: x, 1: w, 2: b, 3: out, 4: f32(eps), 5: u32(axis), 6: u32(w_stride),
                                   7: u32(b_stride)}, grid=(n_rows * tg,), threadgroup=(tg,))


def launch_rms(ctx, dt, x, w, out, axis, n_rows, w_stride, eps=EPS):
    looped = axis > 4096
    tg = MAX_THREADS if looped else single_row_threadgroup(axis, 4)
    ctx.launch(rms_name(dt, axis), {0: x, 1: w, 2: out, 3: f32(eps), 4: u32(axis), 5: u32(w_stride)},
               grid=(n_rows * tg,), threadgroup=(tg,))


def launch_layer_norm_vjp(ctx, dt, x, w, g, gx, gw_temp, gw, gb, axis, n_rows, w_stride, has_w, has_b, eps=EPS):
    if has_b:
        col_sum(ctx, dt, g, n_rows, axis, gb)
    looped = axis > 8192
    tg = MAX_THREADS if looped else single_row_threadgroup(axis, 8)
    ctx.launch(ln_name(dt, axis, vjp=True),
               {0: x, 1: w, 2: g, 3: gx, 4: gw_temp if has_w else w, 5: f32(eps), 6: u32(axis), 7: u32(w_stride)},
               grid=(n_rows * tg,), threadgroup=(tg,), constants={20: bool(has_w)})
    if has_w:
        col_sum(ctx, dt, gw_temp, n_rows, axis, gw)


def rms_groups(n_rows, axis):
    """(rows_per_group, n_groups) of RMSNormVJP."""
    if axis <= 4096:
        rpg = ceildiv(n_rows, 512)
        return rpg, ceildiv(n_rows, rpg)
    return 1, n_rows


def launch_rms_vjp(ctx, dt, x, w, g, gx, gw_temp, gw, axis, n_rows, w_stride, has_w, eps=EPS):
    rpg, n_groups = rms_groups(n_rows, axis)
    args = {0: x, 1: w, 2: g, 3: gx, 4: gw_temp if has_w else w, 5: f32(eps), 6: u32(axis), 7: u32(w_stride)}
    if axis <= 4096:
        tg = single_row_threadgroup(axis, 4)
        grid = n_groups * tg
        args[8] = u32(n_rows)
        args[9] = u32(rpg)
    else:
        tg = MAX_THREADS
        grid = n_rows * tg
    ctx.launch(rms_name(dt, axis, vjp=True), args, grid=(grid,), threadgroup=(tg,), constants={20: bool(has_w)})
    if has_w:
        col_sum(ctx, dt, gw_temp, n_groups, axis, gw)


# --- references (float64, from the definitions) ---------------------------------------------------------------------
def ln_ref(x, w, b, eps=EPS):
    mu = x.mean(axis=-1, keepdims=True)
    xc = x - mu
    return xc / np.sqrt((xc * xc).mean(axis=-1, keepdims=True) + eps) * w + b


def ln_vjp_ref(x, w, g, eps=EPS):
    """y = w * (x - mean) / sqrt(var + eps) + b: gx = n (wg - mean(wg) - xhat mean(wg xhat)), gw = sum_rows g xhat,
    gb = sum_rows g."""
    mu = x.mean(axis=-1, keepdims=True)
    n = 1 / np.sqrt(((x - mu) ** 2).mean(axis=-1, keepdims=True) + eps)
    xh = (x - mu) * n
    wg = w * g
    gx = n * (wg - wg.mean(axis=-1, keepdims=True) - xh * (wg * xh).mean(axis=-1, keepdims=True))
    return gx, (g * xh).sum(axis=0), g.sum(axis=0)


def rms_ref(x, w, eps=EPS):
    return x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + eps) * w


def rms_vjp_ref(x, w, g, eps=EPS):
    """y = w x n, n = 1 / sqrt(mean(x^2) + eps): gx = n wg - x n^3 mean(wg x), gw = sum_rows g x n."""
    n = 1 / np.sqrt((x * x).mean(axis=-1, keepdims=True) + eps)
    wg = w * g
    gx = n * wg - x * n ** 3 * (wg * x).mean(axis=-1, keepdims=True)
    return gx, (g * x * n).sum(axis=0)


# Tolerances wider than the dtype default, and why:
# - forward f16/bf16: the kernels round x_hat to T, multiply by w in T and (layer norm) add b in T: two or three
#   roundings of values up to ~2 (up to ~6 units of T's precision).
FWD_TOL = {"f32": 1e-5, "f16": 3e-3, "bf16": 2e-2}
# - column sums (gw, gb): MLX sums n rows in the gradient's dtype (per-row terms rounded to T first); the error of a
#   sum of n terms of order 1 grows like sqrt(n) units of T's precision while the sum itself can cancel to ~0, so the
#   check is on sum / sqrt(n) (of order 1), with a few units of T's precision.
SUM_TOL = {"f32": 1e-5, "f16": 5e-3, "bf16": 4e-2}


def affine(ctx, dt, axis, kind, lo=-1.0, hi=1.0, neutral=1.0):
    """MLX's passed weight/bias: kind None -> a scalar (value `neutral`, stride 0); "vec" -> 1-D, stride 1;
    "strided" -> every other element of a 2*axis array, stride 2. Returns (buffer, stride, values, is_1d)."""
    if kind is None:
        buf, v = ctx.upload(np.array([neutral]), dt)
        return buf, 0, np.full(axis, v[0]), False
    if kind == "strided":
        buf, v = ctx.rand((2 * axis,), dt, lo, hi)
        return buf, 2, v[::2], True
    buf, v = ctx.rand((axis,), dt, lo, hi)
    return buf, 1, v, True


def load_x(ctx, dt, n_rows, axis, layout, lo, hi):
    """The input and, for `strided` (last axis not contiguous), the row-contiguous copy MLX makes: (buffer the kernel
    reads, float64 rows, the copy's entry point or None)."""
    if layout == "strided":
        src, base = ctx.rand((axis, n_rows), dt, lo, hi)  # the input is base.T
        tmp = ctx.empty(n_rows * axis * itemsize(dt))
        copy_general(ctx, dt, src, (n_rows, axis), (1, n_rows), tmp)
        return tmp, base.T
    src, x = ctx.rand((n_rows, axis), dt, lo, hi)
    return src, x


# --- layer norm -----------------------------------------------------------------------------------------------------
def ln_case(dt, n_rows, axis, w="vec", b="vec", layout="contiguous"):
    name = ln_name(dt, axis)
    variant = ("fwd_looped" if "looped" in name else "fwd") + ("" if w == "vec" else "_w" + (w or "none")) + \
        ("" if b == "vec" else "_b" + (b or "none")) + ("" if layout == "contiguous" else "_" + layout)
    note = ""
    if layout == "strided":
        note = "also launches " + ", ".join(need(COPY, [copy_general_name(dt, (n_rows, axis), (1, n_rows))]))

    def run(ctx):
        xbuf, x = load_x(ctx, dt, n_rows, axis, layout, -1.0, 3.0)
        wbuf, ws, wv, _ = affine(ctx, dt, axis, w, neutral=1.0)
        bbuf, bs, bv, _ = affine(ctx, dt, axis, b, neutral=0.0)
        out = xbuf if layout == "strided" else ctx.empty(n_rows * axis * itemsize(dt))  # in place in the copy
        launch_layer_norm(ctx, dt, xbuf, wbuf, bbuf, out, axis, n_rows, ws, bs)
        ctx.check("out", ctx.read(out, dt, (n_rows, axis)), ln_ref(x, wv, bv), tol=FWD_TOL[dt])

    return Case(f"layer_norm.{variant}.{dt}.{n_rows}x{axis}", "layer_norm", LN_FILE, [name], run, note)


def ln_vjp_case(dt, n_rows, axis, w=True, b=True, donate=False):
    """donate: x and g are donatable -> gx is written over x, gw_temp over g (the bias sum reads g before)."""
    name = ln_name(dt, axis, vjp=True)
    variant = ("vjp_looped" if "looped" in name else "vjp") + ("" if w else "_now") + ("" if b else "_nob") + \
        ("_donated" if donate else "")
    extra = (col_sum_kernels(dt, n_rows, axis) if (w or b) else [])
    note = ("also launches " + ", ".join(need(REDUCE, extra))) if extra else ""

    def run(ctx):
        xbuf, x = ctx.rand((n_rows, axis), dt, -1.0, 3.0)
        gbuf, g = ctx.rand((n_rows, axis), dt, -1.0, 1.0)
        wbuf, ws, wv, _ = affine(ctx, dt, axis, "vec" if w else None)
        nbytes = n_rows * axis * itemsize(dt)
        gx = xbuf if donate else ctx.empty(nbytes)
        gw_temp = (gbuf if donate else ctx.empty(nbytes)) if w else None
        gw = ctx.empty(axis * itemsize(dt))
        gb = ctx.empty(axis * itemsize(dt))
        launch_layer_norm_vjp(ctx, dt, xbuf, wbuf, gbuf, gx, gw_temp, gw, gb, axis, n_rows, ws, w, b)
        want_gx, want_gw, want_gb = ln_vjp_ref(x, wv, g)
        ctx.check("gx", ctx.read(gx, dt, (n_rows, axis)), want_gx, dt=dt)
        root = np.sqrt(n_rows)
        if w:
            ctx.check("gw/sqrt(rows)", ctx.read(gw, dt, axis) / root, want_gw / root, tol=SUM_TOL[dt])
        if b:
            ctx.check("gb/sqrt(rows)", ctx.read(gb, dt, axis) / root, want_gb / root, tol=SUM_TOL[dt])

    return Case(f"layer_norm.{variant}.{dt}.{n_rows}x{axis}", "layer_norm", LN_FILE, [name], run, note)


# --- RMS norm -------------------------------------------------------------------------------------------------------
def rms_case(dt, n_rows, axis, w="vec", layout="contiguous"):
    name = rms_name(dt, axis)
    variant = ("fwd_looped" if "looped" in name else "fwd") + ("" if w == "vec" else "_w" + (w or "none")) + \
        ("" if layout == "contiguous" else "_" + layout)
    note = ""
    if layout == "strided":
        note = "also launches " + ", ".join(need(COPY, [copy_general_name(dt, (n_rows, axis), (1, n_rows))]))

    def run(ctx):
        xbuf, x = load_x(ctx, dt, n_rows, axis, layout, -1.0, 1.0)
        wbuf, ws, wv, _ = affine(ctx, dt, axis, w, neutral=1.0)
        out = xbuf if layout == "strided" else ctx.empty(n_rows * axis * itemsize(dt))
        launch_rms(ctx, dt, xbuf, wbuf, out, axis, n_rows, ws)
        ctx.check("out", ctx.read(out, dt, (n_rows, axis)), rms_ref(x, wv), tol=FWD_TOL[dt])

    return Case(f"rms_norm.{variant}.{dt}.{n_rows}x{axis}", "rms_norm", RMS_FILE, [name], run, note)


def rms_vjp_case(dt, n_rows, axis, w=True, donate_g=False):
    """donate_g: g is donatable (x is not) -> gx is written over g."""
    name = rms_name(dt, axis, vjp=True)
    rpg, n_groups = rms_groups(n_rows, axis)
    variant = ("vjp_looped" if "looped" in name else "vjp") + ("" if w else "_now") + \
        ("_donated" if donate_g else "")
    extra = col_sum_kernels(dt, n_groups, axis) if w else []
    note = f"rows_per_group {rpg}, {n_groups} groups" + \
        ("; also launches " + ", ".join(need(REDUCE, extra)) if extra else "")

    def run(ctx):
        xbuf, x = ctx.rand((n_rows, axis), dt, -1.0, 1.0)
        gbuf, g = ctx.rand((n_rows, axis), dt, -1.0, 1.0)
        wbuf, ws, wv, _ = affine(ctx, dt, axis, "vec" if w else None)
        gx = gbuf if donate_g else ctx.empty(n_rows * axis * itemsize(dt))
        gw_temp = ctx.empty(n_groups * axis * itemsize(dt)) if w else None
        gw = ctx.empty(axis * itemsize(dt))
        launch_rms_vjp(ctx, dt, xbuf, wbuf, gbuf, gx, gw_temp, gw, axis, n_rows, ws, w)
        want_gx, want_gw = rms_vjp_ref(x, wv, g)
        ctx.check("gx", ctx.read(gx, dt, (n_rows, axis)), want_gx, dt=dt)
        if w:
            root = np.sqrt(n_rows)
            ctx.check("gw/sqrt(rows)", ctx.read(gw, dt, axis) / root, want_gw / root, tol=SUM_TOL[dt])

    return Case(f"rms_norm.{variant}.{dt}.{n_rows}x{axis}", "rms_norm", RMS_FILE, [name], run, note)


def cases():
    # layer norm forward
    for dt in ("f32", "f16", "bf16"):
        yield ln_case(dt, 7, 1000)                            # single row: 125 threads' worth -> 128
        yield ln_case(dt, 3, 7000)                            # looped (above 6656)
    yield ln_case("f32", 4, 6656)                             # largest single-row axis: 832 threads
    yield ln_case("f32", 9, 13, b=None)                       # second thread reads 5 of 8
    yield ln_case("f32", 5, 2000, w=None, b=None)             # scalar 1 / 0: strides 0
    yield ln_case("f16", 4, 512, w="strided")                 # w_stride 2
    yield ln_case("bf16", 2, 10001, b=None)                   # looped, tail
    yield ln_case("f32", 6, 300, layout="strided")            # copy, then in place
    # layer norm VJP: the column-sum path depends on (rows, axis)
    yield ln_vjp_case("f32", 9, 100)                          # sums: col_reduce_small
    yield ln_vjp_case("f16", 64, 256)                         # sums: col_reduce_looped
    yield ln_vjp_case("bf16", 300, 384)                       # sums: col_reduce_2pass + looped
    yield ln_vjp_case("f32", 2048, 16)                        # sums: col_reduce_longcolumn + looped
    yield ln_vjp_case("f32", 3, 9000)                         # vjp_layer_norm_looped
    yield ln_vjp_case("bf16", 2, 10000, b=False)
    yield ln_vjp_case("f16", 40, 8192, b=False)               # largest single-row vjp: 1024 threads
    yield ln_vjp_case("f32", 5, 1000, w=False, b=False)       # has_w false, no sums
    yield ln_vjp_case("f16", 4, 8200)                         # just above the vjp looped limit
    yield ln_vjp_case("f32", 33, 257, donate=True)            # gx over x, gw_temp over g

    # RMS norm forward
    for dt in ("f32", "f16", "bf16"):
        yield rms_case(dt, 7, 1000)
        yield rms_case(dt, 3, 5000)                           # looped (above 4096)
    yield rms_case("f32", 9, 4096, w=None)                    # largest single-row axis, scalar weight
    yield rms_case("f32", 33, 3)                              # 3 of 4 reads
    yield rms_case("bf16", 4, 300, w="strided")
    yield rms_case("f32", 6, 300, layout="strided")
    # RMS norm VJP
    yield rms_vjp_case("f32", 5, 1000)                        # 1 row per group; sums: small
    yield rms_vjp_case("f16", 1100, 200)                      # 3 rows per group, 367 groups; sums: 2pass
    yield rms_vjp_case("bf16", 100, 512)                      # sums: looped
    yield rms_vjp_case("f32", 3000, 8)                        # 6 rows per group, 500 groups; sums: 2pass
    yield rms_vjp_case("f32", 3, 5000)                        # vjp_rms_looped
    yield rms_vjp_case("bf16", 3, 4100)
    yield rms_vjp_case("f16", 2, 6000, w=False)
    yield rms_vjp_case("f16", 260, 32768)                     # sums: looped (axis / 32 >= 1024 rules out 2pass)
    yield rms_vjp_case("f32", 4, 128, w=False)
    yield rms_vjp_case("f32", 20, 300, donate_g=True)         # gx over g
