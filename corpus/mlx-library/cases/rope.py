"""Rotary position embedding (rope.metal), launched as mlx/backend/metal/rope.cpp launches it (RoPE::eval_gpu).

Host logic mirrored (launch_rope): x is (B, ..., T, D) with N = the product of the dims between B and T.
- Input handling, in the host's order: dims < D -> copy_gpu (Vector copy for a row-contiguous input, else General)
  of the whole input into the output and rotate in place; row-contiguous -> strides (T*D, D, 1); non-contiguous
  with 3 dims once leading size-1 dims are dropped -> the input's own last three strides; a 4-D (B, N, T, D) view of
  a (B, T, N, D) array -> head_seq_transpose (function constant 3) with strides (D, N*D, 1); anything else ->
  General copy into the output and in place. Output strides are (T*D, D, 1).
- `rope_single_*` when the input is row-contiguous, T == 1 and there is one offset: setBytes the matrix stride
  (int64) at 4, grid (dims/2, B*N), block_dims threadgroup. Otherwise `rope_*`: strides[3] (4), out_strides[3] (5)
  as int64, the offset's stride (int64 6: 0 for a scalar offset, 1 for per-batch offsets), N (int 7), grid
  (dims/2, T, B*ceil(N/4)) -- each thread rotates up to 4 heads.
- The offset is an int32 buffer (2), scale a float (3); `freqs_` kernels take a float32 freqs buffer (10) and its
  stride (int64 11), the others setBytes log2(base) as a float (10). Function constants: forward (1), traditional
  (2), head_seq_transpose (3). The `large_` variants (more than INT32_MAX elements) are not exercised.
"""
import math

import numpy as np

from _rowops_util import COPY, copy_general, copy_general_name, copy_vector, copy_vector_name, need
from mlxhost import block_dims, ceildiv, row_strides, strided_view, transposed
from mlxrun import Case, f32, i32, i64, itemsize, tname, vec

FILE = "rope.metal"
N_PER_THREAD = 4


def rope_plan(shape, strides, dims, n_offsets):
    """Which branch RoPE::eval_gpu takes: (single, copy kind or None, head_seq_transpose, kernel strides, N, branch
    name)."""
    ndim = len(shape)
    T, D = shape[-2], shape[-1]
    N = int(np.prod(shape[1:ndim - 2])) if ndim > 3 else 1
    row_contig = list(strides) == row_strides(shape)
    dispatch_ndim = ndim
    while shape[-dispatch_ndim] == 1 and dispatch_ndim > 3:
        dispatch_ndim -= 1
    hs = False
    if dims < D:
        copy = "vector" if row_contig else "general"
        kstrides = [T * D, D, 1]
        branch = "partial"
    elif row_contig:
        copy = None
        kstrides = [T * D, strides[-2], strides[-1]]
        branch = "contiguous"
    elif dispatch_ndim == 3:
        copy = None
        kstrides = [strides[-3], strides[-2], strides[-1]]
        branch = "strided3d"
    elif ndim == 4 and strides[0] == T * N * D and strides[1] == D and strides[2] == N * D:
        copy, hs = None, True
        kstrides = [strides[1], strides[2], strides[3]]
        branch = "hs_transpose"
    else:
        copy = "general"
        kstrides = [T * D, D, 1]
        branch = "copied"
    single = row_contig and T == 1 and n_offsets == 1
    return single, copy, hs, kstrides, N, branch


def kernel_name(dt, single, with_freqs):
    return "rope_" + ("single_" if single else "") + ("freqs_" if with_freqs else "") + tname(dt)


def launch_rope(ctx, dt, src, shape, strides, out, offset_buf, n_offsets, offset_ndim, dims, traditional, forward,
                base=None, scale=1.0, freqs=None, freq_stride=1):
    single, copy, hs, kstrides, N, _ = rope_plan(shape, strides, dims, n_offsets)
    B, T, D = shape[0], shape[-2], shape[-1]
    size = int(np.prod(shape))
    if copy == "vector":
        copy_vector(ctx, dt, src, out, size)
    elif copy == "general":
        copy_general(ctx, dt, src, shape, strides, out)
    args = {0: out if copy else src, 1: out, 2: offset_buf, 3: f32(scale)}
    if single:
        args[4] = i64(T * D)
        grid = (dims // 2, B * N, 1)
    else:
        args[4] = vec(kstrides, np.int64)
        args[5] = vec([T * D, D, 1], np.int64)
        args[6] = i64(1 if offset_ndim > 0 else 0)
        args[7] = i32(N)
        grid = (dims // 2, T, B * ceildiv(N, N_PER_THREAD))
    if freqs is not None:
        args[10] = freqs
        args[11] = i64(freq_stride)
    else:
        args[10] = f32(math.log2(base))
    ctx.launch(kernel_name(dt, single, freqs is not None), args, grid=grid, threadgroup=block_dims(*grid),
               constants={1: bool(forward), 2: bool(traditional), 3: bool(hs)})


def rope_ref(x, dims, traditional, forward, positions, inv_freq, scale):
    """x: (B, M, T, D) float64 (M = all heads); positions: (B, T). Rotates the pairs (2i, 2i+1) (traditional) or
    (i, i + dims/2) by theta = scale * position * inv_freq[i] (by -theta for the VJP); dims..D pass through."""
    theta = scale * positions[:, None, :, None] * inv_freq[None, None, None, :]
    c, s = np.cos(theta), np.sin(theta)
    if not forward:
        s = -s
    out = x.copy()
    h = dims // 2
    if traditional:
        x1, x2 = x[..., 0:dims:2], x[..., 1:dims:2]
        out[..., 0:dims:2] = x1 * c - x2 * s
        out[..., 1:dims:2] = x1 * s + x2 * c
    else:
        x1, x2 = x[..., :h], x[..., h:dims]
        out[..., :h] = x1 * c - x2 * s
        out[..., h:dims] = x1 * s + x2 * c
    return out


# f32: theta is formed in float (scale * position, times exp2(-d * log2(base))) and fast::sin/cos are approximate,
# so the error grows with |theta| (positions here stay below 64): a few 1e-6 per unit of |x| (3.4e-6 on the H200).
TOL = {"f32": 2e-5, "f16": None, "bf16": None}


def rope_case(dt, shape, dims=None, traditional=False, layout="contiguous", offset=3, freqs=False, freq_stride=1,
              forward=True, base=10000.0, scale=1.0):
    """layout (how the input view is made; rope_plan names the host branch it reaches): contiguous | hs_transpose (a
    (B, T, N, D) array seen as (B, N, T, D)) | seq3d (a 3-D (B, T, D) view
    of a (T, B, D) array) | general (a 4-D (B, N, T, D) view of an (N, B, T, D) array). offset: an int (scalar
    offset) or a list (one per batch)."""
    shape = tuple(shape)
    dims = dims or shape[-1]
    if layout == "hs_transpose":
        base_shape, perm = (shape[0], shape[2], shape[1], shape[3]), (0, 2, 1, 3)
    elif layout == "seq3d":
        base_shape, perm = (shape[1], shape[0], shape[2]), (1, 0, 2)
    elif layout == "general":
        base_shape, perm = (shape[1], shape[0], shape[2], shape[3]), (1, 0, 2, 3)
    else:
        base_shape, perm = shape, tuple(range(len(shape)))
    vshape, vstrides = transposed(base_shape, perm)
    assert tuple(vshape) == shape
    n_off = len(offset) if isinstance(offset, (list, tuple)) else 1
    single, copy, hs, _, _, branch = rope_plan(shape, vstrides, dims, n_off)
    kname = kernel_name(dt, single, freqs)
    variant = ("single" if single else "multi") + ("_traditional" if traditional else "") + \
        ("_freqs" if freqs else "") + ("_fstride" if freq_stride != 1 else "") + \
        ("_offsets" if n_off > 1 else "") + ("" if branch == "contiguous" else "_" + branch) + \
        (f"{dims}of{shape[-1]}" if dims < shape[-1] else "") + ("_gcopy" if copy == "general" and branch == "partial" else "") + ("" if forward else "_vjp") + \
        ("" if scale == 1.0 else "_scaled") + ("" if base == 10000.0 or freqs else "_base")
    size = int(np.prod(shape))
    notes = []
    if copy == "vector":
        notes = need(COPY, [copy_vector_name(dt, size)])
    elif copy == "general":
        notes = need(COPY, [copy_general_name(dt, shape, vstrides)])
    note = ("also launches " + ", ".join(notes)) if notes else ""

    def run(ctx):
        src, xb = ctx.rand(base_shape, dt, -1.0, 1.0)
        x = strided_view(xb, shape, vstrides)
        offs = np.array(offset if n_off > 1 else [offset], dtype=np.int32)
        offset_buf = ctx.buffer(offs)
        half = dims // 2
        fbuf = None
        if freqs:
            fb, fv = ctx.rand((half * freq_stride,), "f32", 1.0, 30.0)
            fbuf = fb
            inv_freq = 1.0 / fv[::freq_stride]
        else:
            inv_freq = base ** (-np.arange(half) / half)
        out = ctx.empty(size * itemsize(dt))
        launch_rope(ctx, dt, src, shape, vstrides, out, offset_buf, n_off, 1 if n_off > 1 else 0, dims, traditional,
                    forward, base=base, scale=scale, freqs=fbuf, freq_stride=freq_stride)
        B, T, D = shape[0], shape[-2], shape[-1]
        x4 = np.asarray(x, dtype=np.float64).reshape(B, -1, T, D)
        pos = (offs[:, None] if n_off > 1 else np.full((B, 1), offs[0])) + np.arange(T)[None, :]
        want = rope_ref(x4, dims, traditional, forward, pos.astype(np.float64), inv_freq, scale)
        ctx.check("out", ctx.read(out, dt, size), want.reshape(-1), tol=TOL[dt], dt=dt)

    name = f"rope.{variant}.{dt}.{'x'.join(map(str, shape))}"
    return Case(name, "rope", FILE, [kname], run, note)


def cases():
    for dt in ("f32", "f16", "bf16"):
        yield rope_case(dt, (2, 4, 1, 64), offset=17)                          # inference: rope_single_
        yield rope_case(dt, (2, 5, 7, 32))                                     # 5 heads: second group of 4 partial
    yield rope_case("f32", (1, 8, 1, 128), traditional=True, offset=5, base=500000.0)
    yield rope_case("f16", (2, 3, 1, 32), traditional=True, freqs=True, offset=40)
    yield rope_case("f32", (1, 4, 9, 64), traditional=True, scale=0.25)
    yield rope_case("f32", (3, 2, 6, 16), offset=[0, 7, 30])                   # per-batch offsets: stride 1
    yield rope_case("f32", (3, 4, 1, 32), offset=[2, 9, 11])                   # T == 1 but 3 offsets: not single
    yield rope_case("bf16", (2, 4, 5, 64), traditional=True, freqs=True)
    yield rope_case("f32", (2, 3, 4, 32), freqs=True, freq_stride=2)           # freq_stride 2
    yield rope_case("f16", (2, 3, 4, 32), freqs=True)
    yield rope_case("f32", (2, 2, 1, 64), freqs=True, offset=8)
    yield rope_case("bf16", (1, 2, 1, 32), freqs=True, traditional=True, freq_stride=3, offset=3)
    yield rope_case("f32", (2, 3, 5, 80), dims=48)                             # dims < D: vector copy, in place
    yield rope_case("f16", (2, 2, 1, 96), dims=64, offset=9)                   # ... and single
    yield rope_case("f32", (2, 6, 7, 32), layout="hs_transpose")               # (B, T, N, D) seen as (B, N, T, D)
    yield rope_case("f16", (3, 3, 5, 64), layout="hs_transpose", traditional=True, offset=12)
    yield rope_case("f16", (1, 3, 5, 64), layout="hs_transpose", offset=12)     # B == 1: the 3-D branch instead
    yield rope_case("f32", (3, 10, 16), layout="seq3d")                        # 3-D non-contiguous: own strides
    yield rope_case("f32", (3, 10, 24), dims=16, layout="seq3d")               # dims < D, not contiguous: g copy
    yield rope_case("f32", (2, 3, 4, 16), layout="general")                    # other 4-D views: g copy, in place
    yield rope_case("f32", (2, 4, 6, 32), forward=False)                       # the VJP kernel (forward = false)
    yield rope_case("bf16", (2, 4, 1, 64), forward=False, traditional=True, offset=21)
    yield rope_case("f32", (2, 2, 3, 4, 16))                                   # 5-D: N = 6
