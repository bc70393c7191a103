#!/usr/bin/env python3
"""MLX's Metal kernels through metal2vk against PyTorch (CUDA) on the same GPU, in one process.

    PYTHONPATH=<metal2vk python> python3 bench/mlx_vs_torch.py [--mlx ROOT] [--filter S]... [--reps N]
                                                                [--report PREFIX] [--ceiling-gbs 4110]
                                                                [--peak-tflops 764]

Each item launches MLX's kernels with the run suite's launchers (corpus/mlx-library/cases/: the same code the
suite checks against numpy references), at sizes that keep the GPU busy. Timing, both sides alike: a 500 ms warm-up
of the same work (the H200's SM clock idles at 345 MHz), then `reps` repetitions back to back; metal2vk's time is
the GPU timestamp span of those repetitions over `reps`, PyTorch's the CUDA-event span over `reps`. The outputs of
both are compared (a sanity check: the launchers' correctness is the run suite's job). Reported: time, the ratio to
PyTorch, and GB/s (bytes each side must move at least: inputs read once, outputs written once) or TFLOP/s as a
fraction of the ceiling.
"""
import argparse
import json
import os
import signal
import sys
import time

import numpy as np
import torch  # before the case folder joins sys.path: cases/copy.py would shadow the standard library's copy

HERE = os.path.dirname(os.path.abspath(__file__))
LIB = os.path.join(os.path.dirname(HERE), "corpus", "mlx-library")
sys.path.insert(0, LIB)
sys.path.insert(0, os.path.join(LIB, "cases"))

import metal2vk as m2v  # noqa: E402
import mlxrun  # noqa: E402
from mlxhost import mlx_buffer_size  # noqa: E402
from mlxrun import Case, Ctx, itemsize, store  # noqa: E402

TORCH_DT = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}


class Item:
    """A benchmark: `setup(ctx, rng)` uploads inputs and returns (launch, read, torch_fn, torch_inputs); `launch()`
    records one repetition on ctx, `read()` returns our output as float64, `torch_fn(*torch_inputs)` computes the
    same op on CUDA. bytes / flops: the minimum traffic / arithmetic of one repetition. reference: (label, factory),
    a second CUDA implementation timed like PyTorch's, `factory()(*torch_inputs)` (bench/cuda_tile_gemm.py)."""

    def __init__(self, name, kernels, setup, nbytes=0, flops=0, tol=2e-2, note="", reference=None):
        """kernels: [(file relative to MLX's kernels folder, entry point), ...]"""
        self.name, self.kernels, self.setup = name, kernels, setup
        self.nbytes, self.flops, self.tol, self.note = nbytes, flops, tol, note
        self.reference = reference


def torch_tensor(values, dt):
    return torch.from_numpy(np.asarray(values, dtype=np.float32)).to("cuda", TORCH_DT[dt])


# ---------------------------------------------------------------------------------------------------------------
# Items
def softmax_item(dt, n):
    import softmax as sm

    def setup(ctx, rng):
        x = rng.uniform(-4, 4, (n, n)).astype(np.float32)
        src = ctx.buffer(store(x, dt))
        out = m2v.Buffer(n * n * itemsize(dt))
        return (lambda: sm.launch_softmax(ctx, dt, src, out, n, n),
                lambda: ctx.read(out, dt, (n, n)),
                lambda t: torch.softmax(t, dim=-1), [torch_tensor(x, dt)])

    return Item(f"softmax {dt} {n}x{n}", [(sm.SOFTMAX_FILE, sm.softmax_name(dt, n, False))], setup,
                nbytes=2 * n * n * itemsize(dt))


def norm_item(kind, dt, n):
    import norms

    def setup(ctx, rng):
        x = rng.uniform(-2, 2, (n, n)).astype(np.float32)
        w = rng.uniform(0.5, 1.5, n).astype(np.float32)
        b = rng.uniform(-0.5, 0.5, n).astype(np.float32)
        src, wb, bb = ctx.buffer(store(x, dt)), ctx.buffer(store(w, dt)), ctx.buffer(store(b, dt))
        out = m2v.Buffer(n * n * itemsize(dt))
        tx, tw, tb = torch_tensor(x, dt), torch_tensor(w, dt), torch_tensor(b, dt)
        if kind == "layer_norm":
            launch = lambda: norms.launch_layer_norm(ctx, dt, src, wb, bb, out, n, n, 1, 1)
            fn = lambda x, w, b: torch.nn.functional.layer_norm(x, (n,), w, b, eps=norms.EPS)
        else:
            launch = lambda: norms.launch_rms(ctx, dt, src, wb, out, n, n, 1)
            fn = lambda x, w, b: torch.nn.functional.rms_norm(x, (n,), w, eps=norms.EPS)
        return launch, lambda: ctx.read(out, dt, (n, n)), fn, [tx, tw, tb]

    name = norms.ln_name(dt, n) if kind == "layer_norm" else norms.rms_name(dt, n)
    reference = None
    if kind == "rms_norm" and name.startswith("rms_looped"):
        import cuda_same_shape
        reference = ("same-shape CUDA", lambda: cuda_same_shape.rms_norm(dt, norms.EPS))
    return Item(f"{kind} {dt} {n}x{n}", [(norms.LN_FILE if kind == "layer_norm" else norms.RMS_FILE, name)], setup,
                nbytes=2 * n * n * itemsize(dt), reference=reference)


def unary_item(op, dt, n):
    import unary
    from _elemwise_util import contiguous

    view = contiguous([n])

    def setup(ctx, rng):
        x = rng.uniform(-4, 4, n).astype(np.float32)
        src = ctx.buffer(store(x, dt))
        out = m2v.Buffer(n * itemsize(dt))
        fn = {"Exp": torch.exp, "Sigmoid": torch.sigmoid}[op]
        return (lambda: unary.launch_unary(ctx, op, dt, view, src, out),
                lambda: ctx.read(out, dt, n), fn, [torch_tensor(x, dt)])

    import cuda_same_shape
    reference = ("same-shape CUDA", lambda: cuda_same_shape.unary(op, dt)) if op in cuda_same_shape.UNARY_OPS \
        else None
    return Item(f"{op.lower()} {dt} 2^{n.bit_length() - 1}", [(unary.FILE, unary.plan(op, dt, view)[0])], setup,
                nbytes=2 * n * itemsize(dt), reference=reference)


def binary_item(op, dt, n):
    import binary
    from _elemwise_util import contiguous

    view = contiguous([n])

    def setup(ctx, rng):
        a = rng.uniform(-4, 4, n).astype(np.float32)
        b = rng.uniform(-4, 4, n).astype(np.float32)
        ab, bb = ctx.buffer(store(a, dt)), ctx.buffer(store(b, dt))
        out = m2v.Buffer(n * itemsize(dt))
        fn = {"Add": torch.add, "Multiply": torch.mul}[op]
        return (lambda: binary.launch_binary(ctx, op, dt, view, ab, view, bb, [out], [dt]),
                lambda: ctx.read(out, dt, n), fn, [torch_tensor(a, dt), torch_tensor(b, dt)])

    import cuda_same_shape
    reference = ("same-shape CUDA", lambda: cuda_same_shape.binary(op, dt)) if op in cuda_same_shape.BINARY_OPS \
        else None
    return Item(f"{op.lower()} {dt} 2^{n.bit_length() - 1}", [("binary.metal", binary.plan(op, view, view, dt)[0])],
                setup, nbytes=3 * n * itemsize(dt), reference=reference)


def silu_item(dt, n):
    """MLX's nn.silu without mx.compile: x * sigmoid(x), two kernels (Sigmoid, then Multiply)."""
    import binary
    import unary
    from _elemwise_util import contiguous

    view = contiguous([n])

    def setup(ctx, rng):
        x = rng.uniform(-4, 4, n).astype(np.float32)
        src = ctx.buffer(store(x, dt))
        sig = m2v.Buffer(n * itemsize(dt))
        out = m2v.Buffer(n * itemsize(dt))

        def launch():
            unary.launch_unary(ctx, "Sigmoid", dt, view, src, sig)
            binary.launch_binary(ctx, "Multiply", dt, view, src, view, sig, [out], [dt])

        return launch, lambda: ctx.read(out, dt, n), torch.nn.functional.silu, [torch_tensor(x, dt)]

    names = [(unary.FILE, unary.plan("Sigmoid", dt, view)[0]),
             ("binary.metal", binary.plan("Multiply", view, view, dt)[0])]
    import cuda_same_shape
    return Item(f"silu {dt} 2^{n.bit_length() - 1}", names, setup,
                nbytes=2 * n * itemsize(dt), note="two kernels, as MLX without mx.compile (sigmoid, multiply)",
                reference=("same-shape CUDA, two kernels", lambda: cuda_same_shape.silu(dt)))


def reduce_item(dt, n, axis):
    import reduce as red
    from _reduce_util import View

    view = View((n, n))
    out_shape = [n, 1] if axis == 1 else [1, n]

    def setup(ctx, rng):
        x = rng.uniform(-1, 1, (n, n)).astype(np.float32)
        src = ctx.buffer(store(x, dt))
        out = red.Out(out_shape, dt)
        out.buf = m2v.Buffer(n * itemsize(dt))
        return (lambda: red.launch_reduce(ctx, "sum", dt, src, view, [axis], out),
                lambda: ctx.read(out.buf, dt, n), lambda t: torch.sum(t, dim=axis), [torch_tensor(x, dt)])

    dry = red.DryRun()
    red.launch_reduce(dry, "sum", dt, None, view, [axis], red.Out(out_shape, dt))
    return Item(f"sum over {'rows' if axis == 1 else 'columns'} {dt} {n}x{n}", [(red.FILE, k) for k in dry.names],
                setup,
                nbytes=n * n * itemsize(dt) + n * itemsize(dt))


class Matrix:
    """A row-major matrix operand in the shape the run suite's matmul launchers read (steel_gemm.Operand's fields)."""

    def __init__(self, ctx, values, dt):
        self.shape, self.strides = list(values.shape), [values.shape[1], 1]
        self.buf = ctx.buffer(store(values, dt))


def steel_gemm_item(dt, n, devc=None):
    """MLX's steel GEMM with the tile MLX's matmul.cpp picks for device class `devc` (default: the run suite's), and
    as reference a hand-written CUDA kernel with the same tile and loop structure (bench/cuda_tile_gemm.py)."""
    import steel_gemm as sg

    devc = devc or sg.DEVC

    def with_devc(fn):
        def run(*a):
            saved, sg.DEVC = sg.DEVC, devc
            try:
                return fn(*a)
            finally:
                sg.DEVC = saved
        return run

    def setup(ctx, rng):
        a = rng.uniform(-1, 1, (n, n)).astype(np.float32)
        b = rng.uniform(-1, 1, (n, n)).astype(np.float32)
        A, B = Matrix(ctx, a, dt), Matrix(ctx, b, dt)
        out = m2v.Buffer(n * n * itemsize(dt))
        return (with_devc(lambda: sg.matmul(ctx, dt, A, B, [n, n], out)), lambda: ctx.read(out, dt, (n, n)),
                torch.matmul, [torch_tensor(a, dt), torch_tensor(b, dt)])

    names = with_devc(sg.matmul_kernels)(dt, False, False, n, n, n, 1)
    file = sg.FILE_SPLITK if "splitk" in names[0] else sg.FILE_FUSED
    tile = sg.gemm_tparams(devc, dt, False, False, n, n, n, 1)
    reference = None
    if "splitk" not in names[0]:
        from cuda_tile_gemm import tile_gemm
        reference = ("same-tile CUDA", lambda: tile_gemm(dt, tile))
    suffix = "" if devc == sg.DEVC else f" (device class '{devc}')"
    return Item(f"steel GEMM {dt} {n}^3{suffix}", [(file, k) for k in names], setup, flops=2 * n ** 3, tol=5e-2,
                note=f"{names[0]} (MLX's tile choice for device class '{devc}')", reference=reference)


def nax_gemm_item(dt, n, devc="d"):
    """MLX's NAX GEMM (Metal 4 matmul2d on cooperative tensors; cases/nax.py) with the tile MLX's matmul.cpp picks
    for device class `devc` ('d': 64x128x256 2x4 simdgroups, 'g': 128x128x512 4x4), against cuBLAS."""
    import nax
    import steel_gemm as sg

    def setup(ctx, rng):
        a = rng.uniform(-1, 1, (n, n)).astype(np.float32)
        b = rng.uniform(-1, 1, (n, n)).astype(np.float32)
        A, B = Matrix(ctx, a, dt), Matrix(ctx, b, dt)
        out = m2v.Buffer(n * n * itemsize(dt))
        return (lambda: sg.matmul(ctx, dt, A, B, [n, n], out, axpby=nax.nax_axpby(devc)),
                lambda: ctx.read(out, dt, (n, n)), torch.matmul, [torch_tensor(a, dt), torch_tensor(b, dt)])

    names = nax.nax_kernels(devc, dt, False, False, n, n, n, 1)
    reference = None
    if not nax.use_splitk_nax(n, n, n, 1):
        from cuda_nax_gemm import nax_gemm
        tile = nax.fused_nax_tile(devc, n, n, n)
        reference = ("same-algorithm CUDA", lambda: nax_gemm(dt, tile, nax.fused_nax_swizzle_log(devc, n, tile)))
    return Item(f"NAX GEMM {dt} {n}^3 (device class '{devc}')", [(nax.gemm_file(names), k) for k in names], setup,
                flops=2 * n ** 3, tol=5e-2, note=f"{names[0]} (MLX's NAX tile choice for device class '{devc}')",
                reference=reference)


def sdpa_decode_item(dt, heads=32, keys=4096, d=128, arch="d", kv_heads=None):
    """One decoded token's attention over `keys` cached keys: `heads` query heads sharing `kv_heads` key/value heads
    (grouped-query attention; default: as many as the query heads)."""
    import attention as at

    kv_heads = kv_heads or heads

    def setup(ctx, rng):
        def arr(shape, lo, hi):
            x = rng.uniform(lo, hi, shape).astype(np.float32)
            return at.Arr(ctx.buffer(store(x, dt)), 0, shape, [int(s) for s in at.row_strides(shape)], None, dt), x

        q, qv = arr((1, heads, 1, d), -2, 2)
        k, kv = arr((1, kv_heads, keys, d), -2, 2)
        v, vv = arr((1, kv_heads, keys, d), -1, 1)
        out = m2v.Buffer(heads * d * itemsize(dt))
        scale = 1.0 / np.sqrt(d)

        def torch_sdpa(tq, tk, tv):
            return torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, enable_gqa=kv_heads != heads)

        return (lambda: at.launch_sdpa_vector(ctx, dt, q, k, v, out, scale, False, None, None, arch),
                lambda: ctx.read(out, dt, (1, heads, 1, d)), torch_sdpa,
                [torch_tensor(qv, dt), torch_tensor(kv, dt), torch_tensor(vv, dt)])

    names = at.vector_kernels(dt, (1, heads, 1, d), (1, kv_heads, keys, d), d, arch, False, False)
    kv = f" ({kv_heads} key/value heads)" if kv_heads != heads else ""
    return Item(f"sdpa decode {dt} 1x{keys} keys, {heads} heads{kv}, d={d}", [(at.FILE_VEC, k) for k in names],
                setup, nbytes=(2 * kv_heads * keys * d + 2 * heads * d) * itemsize(dt),
                note=f"{' + '.join(names)} (device class '{arch}')")


def sdpa_prefill_item(dt, seq=2048, heads=32, d=128):
    """MLX's steel attention (full self-attention, its simdgroup_matrix kernel) against PyTorch's SDPA."""
    import attention as at

    def setup(ctx, rng):
        def arr(lo, hi):
            shape = (1, heads, seq, d)
            x = rng.uniform(lo, hi, shape).astype(np.float32)
            return at.Arr(ctx.buffer(store(x, dt)), 0, shape, [int(s) for s in at.row_strides(shape)], None, dt), x

        (q, qv), (k, kv), (v, vv) = arr(-2, 2), arr(-2, 2), arr(-1, 1)
        out = at.Arr(m2v.Buffer(heads * seq * d * itemsize(dt)), 0, (1, heads, seq, d),
                     [int(s) for s in at.row_strides((1, heads, seq, d))], None, dt)
        scale = 1.0 / np.sqrt(d)
        return (lambda: at.launch_steel_attention(ctx, dt, q, k, v, out, scale, False, None, None),
                lambda: ctx.read(out.buf, dt, (1, heads, seq, d)), torch.nn.functional.scaled_dot_product_attention,
                [torch_tensor(qv, dt), torch_tensor(kv, dt), torch_tensor(vv, dt)])

    return Item(f"sdpa prefill {dt} {seq} tokens, {heads} heads, d={d}", [(at.FILE_STEEL, at.steel_name(dt, d, None))],
                setup, flops=4 * heads * seq * seq * d, note=at.steel_name(dt, d, None))


def quantized_setup(p, dt, m, n, k, bits, gs):
    """The setup of y = x W^T with W (n, k) affine-quantized and x (m, k), launched as plan `p` says (cases/
    quantized.py). PyTorch's side is the same product with W dequantized to `dt`; the packed uint32 words (as int32)
    and the scales and biases as stored (exact in float32, so torch_tensor's conversion to dt is exact) follow its two
    operands, for the CUDA references that read what MLX's kernel reads."""
    from _quantized_util import pack_rows

    def setup(ctx, rng):
        codes = rng.integers(0, 1 << bits, (n, k))
        scales = rng.uniform(0.001, 0.02, (n, k // gs))
        biases = rng.uniform(-0.1, 0.1, (n, k // gs))
        s_st, b_st = mlxrun.rounded(scales, dt), mlxrun.rounded(biases, dt)
        w = codes * np.repeat(s_st, gs, axis=1) + np.repeat(b_st, gs, axis=1)
        x = rng.integers(-64, 65, (m, k)) / 64.0
        packed = pack_rows(codes, bits)
        bufs = {"w": ctx.buffer(packed), "s": ctx.buffer(store(scales, dt)),
                "b": ctx.buffer(store(biases, dt)), "x": ctx.buffer(store(x, dt)),
                "y": m2v.Buffer(m * n * itemsize(dt))}
        args = {i: (bufs[a] if isinstance(a, str) else a) for i, a in p["args"].items()}
        quantized = [torch.from_numpy(packed.view(np.int32)).to("cuda"), torch_tensor(s_st, dt),
                     torch_tensor(b_st, dt)]
        return (lambda: ctx.launch(p["name"], args, groups=p["groups"], threadgroup=p["threadgroup"]),
                lambda: ctx.read(bufs["y"], dt, (m, n)), lambda xt, wt, *_: torch.matmul(xt, wt.T),
                [torch_tensor(x, dt), torch_tensor(w, dt)] + quantized)

    return setup


def nax_sdpa_prefill_item(dt, seq=2048, heads=32, d=128):
    """MLX's NAX attention (Metal 4 matmul2d, bq 64, bk 32, 4 simdgroups; the route
    scaled_dot_product_attention.cpp takes when NAX is available; cases/nax.py) against PyTorch's SDPA."""
    import attention as at
    import nax

    def setup(ctx, rng):
        shape = (1, heads, seq, d)

        def arr(lo, hi, buf=None):
            x = rng.uniform(lo, hi, shape).astype(np.float32)
            b = buf or ctx.buffer(store(x, dt))
            return at.Arr(b, 0, shape, [int(s) for s in at.row_strides(shape)], None, dt), x

        (q, qv), (k, kv), (v, vv) = arr(-2, 2), arr(-2, 2), arr(-1, 1)
        out = at.Arr(m2v.Buffer(heads * seq * d * itemsize(dt)), 0, shape, [int(s) for s in at.row_strides(shape)],
                     None, dt)
        scale = 1.0 / np.sqrt(d)
        return (lambda: nax.launch_attention_nax(ctx, dt, q, k, v, out, scale, False, None, None, heads * seq * d),
                lambda: ctx.read(out.buf, dt, shape), torch.nn.functional.scaled_dot_product_attention,
                [torch_tensor(qv, dt), torch_tensor(kv, dt), torch_tensor(vv, dt)])

    from cuda_nax_attention import nax_attention
    name = nax.attn_nax_name(dt, d, None)
    return Item(f"NAX sdpa prefill {dt} {seq} tokens, {heads} heads, d={d}", [(nax.FILE_ATTN_NAX, name)], setup,
                flops=4 * heads * seq * seq * d, note=f"{name} (MLX's NAX attention)",
                reference=("same-algorithm CUDA", lambda: nax_attention(dt)))


def nax_qmm_item(dt, m, k, n, bits=4, gs=64):
    """y = x W^T, x (m, k), W (n, k) affine-quantized: QuantizedMatmul::eval_gpu's qmm route on a NAX device
    (qmm_t_nax; cases/quantized.py's plan with the NAX device model). PyTorch's side: the same product with W
    dequantized to `dt` (cuBLAS; it reads 16/bits times the weight bytes, which matters little at m = 512)."""
    import nax
    import quantized as qz

    q = qz.Q("affine", dt, [m, k], n, transpose=True, gs=gs, bits=bits, dev=nax.QDEV)
    p = qz.plan(q)
    assert p["route"] == "qmm" and "_nax_" in p["name"], p["name"]

    setup = quantized_setup(p, dt, m, n, k, bits, gs)

    from cuda_nax_qmm import nax_qmm

    def reference_fn():
        run = nax_qmm(dt, gs, bits)
        return lambda xt, wt, wq, st, bt: run(xt, wq, st, bt)  # the dense weights are PyTorch's operand

    return Item(f"NAX qmm {bits}-bit gs{gs} {dt} {m}x{k}x{n}", [(qz.NAX_FILES["affine"], p["name"])], setup,
                flops=2 * m * n * k, tol=5e-2, note=f"{p['name']}; PyTorch: dense {dt} matmul of the dequantized weights",
                reference=("same-algorithm CUDA", reference_fn))


def gemv_item(dt, n, k=None):
    """y = W x, W (n, k) row-major (k = n unless given), x (k, 1): Matmul::eval_gpu's gemv route (gemv.metal)."""
    import gemv

    k = n if k is None else k
    W, X = gemv.View((n, k)), gemv.View((k, 1))
    p = gemv.plan_matmul(dt, W, X)

    def setup(ctx, rng):
        w = rng.uniform(-1, 1, (n, k)).astype(np.float32)
        x = rng.uniform(-1, 1, (k, 1)).astype(np.float32)
        bufs = {id(W): ctx.buffer(store(w, dt)), id(X): ctx.buffer(store(x, dt))}
        out = m2v.Buffer(n * itemsize(dt))
        args = {i: out if isinstance(a, str) else bufs[id(a)] if isinstance(a, gemv.View) else a
                for i, a in p["args"].items()}
        return (lambda: ctx.launch(p["name"], args, groups=p["groups"], threadgroup=p["threadgroup"],
                                   constants=p["constants"]),
                lambda: ctx.read(out, dt, (n, 1)), torch.matmul, [torch_tensor(w, dt), torch_tensor(x, dt)])

    from cuda_tile_gemv import mlx_gemv_tile, tile_gemv
    tile = mlx_gemv_tile(p["name"])
    reference = ("same-tile CUDA", lambda: tile_gemv(dt, tile)) if tile and dt in ("f16", "bf16") else None
    return Item(f"gemv {dt} {n}x{k}", [(gemv.FILE, p["name"])], setup, nbytes=(n * k + k + n) * itemsize(dt),
                note=p["name"], reference=reference)


def qmv_item(dt, n_out, k, bits=4, gs=64):
    """y = x W^T with W (n_out, k) affine-quantized (bits, group size gs): QuantizedMatmul::eval_gpu's qmv route.
    PyTorch has no affine 4-bit matmul of MLX's format: its side is the same product with W dequantized to `dt`
    (a dense gemv, reading 16/bits times the weight bytes). The reference (bench/cuda_tile_qmv.py, MLX's qmv_fast
    shape) reads the same packed words, scales and biases MLX's kernel reads, passed after PyTorch's two operands."""
    import quantized as qz

    q = qz.Q("affine", dt, [1, k], n_out, transpose=True, gs=gs, bits=bits)
    p = qz.plan(q)

    setup = quantized_setup(p, dt, 1, n_out, k, bits, gs)

    from cuda_tile_qmv import mlx_qmv_fast, qmv_fast
    reference = None
    if mlx_qmv_fast(p["name"]) == (dt, gs, bits):
        def reference_fn():
            run = qmv_fast(dt, gs, bits)
            return lambda xt, wt, wq, st, bt: run(xt, wq, st, bt)  # the dense weights are PyTorch's operand

        reference = ("same-shape CUDA", reference_fn)
    wbytes = n_out * k * bits // 8 + 2 * n_out * (k // gs) * itemsize(dt)
    return Item(f"qmv {bits}-bit gs{gs} {dt} {n_out}x{k}", [(qz.FILES["affine"], p["name"])], setup,
                nbytes=wbytes + (k + n_out) * itemsize(dt),
                note=f"{p['name']}; PyTorch: dense {dt} gemv of the dequantized weights", reference=reference)


def items():
    out = []
    for dt in ("f32", "f16", "bf16"):
        for n in (4096, 8192):
            out.append(softmax_item(dt, n))
    for kind in ("layer_norm", "rms_norm"):
        for dt in ("f32", "f16", "bf16"):
            out.append(norm_item(kind, dt, 8192))
    for dt in ("f32", "f16", "bf16"):
        out.append(unary_item("Exp", dt, 1 << 26))
        out.append(unary_item("Sigmoid", dt, 1 << 26))
        out.append(silu_item(dt, 1 << 26))
        out.append(binary_item("Add", dt, 1 << 26))
    for dt in ("f32", "f16", "bf16"):
        out.append(reduce_item(dt, 8192, 1))
        out.append(reduce_item(dt, 8192, 0))
    for dt in ("f16", "bf16"):
        for n in (4096, 8192):
            out.append(steel_gemm_item(dt, n))
    # the tile MLX picks for other device classes (two simdgroups per dimension)
    out.append(steel_gemm_item("f16", 4096, devc="s"))
    for dt in ("f16", "bf16"):
        for n in (4096, 8192):
            for devc in ("d", "g"):
                out.append(nax_gemm_item(dt, n, devc))
    for dt in ("f32", "f16", "bf16"):
        out.append(sdpa_decode_item(dt))
    for dt in ("f16", "bf16"):
        out.append(sdpa_prefill_item(dt))
    for dt in ("f16", "bf16"):
        for seq in (2048, 8192):
            out.append(nax_sdpa_prefill_item(dt, seq))
        out.append(nax_qmm_item(dt, 512, 4096, 14336))
    out.append(gemv_item("f16", 8192))
    out.append(gemv_item("bf16", 8192))
    out.append(qmv_item("f16", 14336, 4096))
    out.append(qmv_item("bf16", 14336, 4096))
    # One decoded token's projections in a decoder layer: Llama-3.1-8B (hidden 4096, intermediate 14336) and
    # Qwen3-0.6B (hidden 1024, intermediate 3072); the up/gate (intermediate x hidden) and down (hidden x
    # intermediate) shapes, and the square attention-output shape.
    # One decoded token's attention: Llama-3.1-8B (32 query heads, 8 key/value heads) and Qwen3-0.6B (16 and 8), at
    # 512 and 4096 cached tokens, d = 128.
    for heads in (32, 16):
        for keys in (512, 4096):
            for dt in ("f16", "bf16"):
                out.append(sdpa_decode_item(dt, heads, keys, kv_heads=8))
    for hidden, inter in ((4096, 14336), (1024, 3072)):
        for n_out, k in ((hidden, hidden), (inter, hidden), (hidden, inter)):
            for dt in ("f16", "bf16"):
                for it in (gemv_item(dt, n_out, k), qmv_item(dt, n_out, k)):
                    if all(o.name != it.name for o in out):
                        out.append(it)
    return out


# ---------------------------------------------------------------------------------------------------------------
class BenchCtx(Ctx):
    """The launchers' scratch buffers (ctx.empty: split-k partials, two-pass intermediates) come from a pool, one per
    call position within a repetition, as MLX's allocator would hand back the same cached buffers: no allocation and
    no poisoning fill inside the timed loop."""

    def __init__(self, *args):
        super().__init__(*args)
        self.pool, self.calls = {}, 0

    def start_repetition(self):
        self.calls = 0

    def empty(self, nbytes, poison=True):
        key = (self.calls, int(nbytes))
        self.calls += 1
        if key not in self.pool:
            self.pool[key] = m2v.Buffer(mlx_buffer_size(nbytes))
        return self.pool[key]


def time_ours(runner, ctx, launch, reps, warmup_s):
    s = runner.stream

    def one():
        ctx.start_repetition()
        launch()

    t0 = time.time()
    while time.time() - t0 < warmup_s:
        for _ in range(4):
            one()
        s.synchronize()
    s.take_timings()
    for _ in range(reps):
        one()
    s.synchronize()
    t = s.take_timings()
    return (t[-1]["end_ns"] - t[0]["start_ns"]) / reps / 1e3, len(t) // reps


def time_torch(fn, args, reps, warmup_s):
    torch.cuda.synchronize()
    t0 = time.time()
    while time.time() - t0 < warmup_s:
        for _ in range(4):
            fn(*args)
        torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(reps):
        y = fn(*args)
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) * 1e3 / reps, y


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mlx", default=os.environ.get("M2V_MLX_ROOT") or os.path.join(
        os.path.dirname(os.path.dirname(HERE)), "shared", "third_party", "mlx"))
    ap.add_argument("--filter", action="append", default=[])
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--warmup-ms", type=float, default=500)
    ap.add_argument("--ceiling-gbs", type=float, default=4110)
    ap.add_argument("--peak-tflops", type=float, default=764)
    ap.add_argument("--report")
    args = ap.parse_args()

    its = [i for i in items() if not args.filter or any(f in i.name for f in args.filter)]
    runner = mlxrun.Runner(os.path.abspath(args.mlx), jobs=0)
    runner.compile([Case(it.name, "bench", f, [k], None) for it in its for f, k in it.kernels])
    runner.stream = m2v.Stream(timestamps=True, batch_size=64)
    dev = m2v.device_info()["description"]
    gpu = torch.cuda.get_device_name()
    print(f"metal2vk: {dev}\ntorch {torch.__version__} on {gpu}", flush=True)
    rng = np.random.default_rng(0)
    rows = []
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    try:
        measure_all(its, runner, rng, rows, args)
    except KeyboardInterrupt:  # a run stopped from outside still reports what it measured
        print(f"interrupted after {len(rows)} of {len(its)} items", flush=True)
    if args.report:
        write_report(args.report, rows, dev, gpu, args)
    return 0


def measure_all(its, runner, rng, rows, args):
    for it in its:
        ctx = BenchCtx(runner, Case(it.name, "bench", it.kernels[0][0], [], None), 0)
        where = {k: f for f, k in it.kernels}
        ctx.kernel = lambda entry, where=where: runner.kernel(where[entry], entry)
        row = {"item": it.name, "note": it.note}
        try:
            launch, read, fn, targs = it.setup(ctx, rng)
            ours_us, dispatches = time_ours(runner, ctx, launch, args.reps, args.warmup_ms / 1e3)
            torch_us, ty = time_torch(fn, targs, args.reps, args.warmup_ms / 1e3)
            got = read()

            def difference(y):
                want = y.float().cpu().numpy().astype(np.float64).reshape(got.shape)
                return float(np.max(np.abs(got - want) / np.maximum(1, np.abs(want))))

            err = difference(ty)
            row.update(ours_us=ours_us, torch_us=torch_us, ratio=ours_us / torch_us, dispatches=dispatches,
                       max_diff_vs_torch=err, outputs_agree=err <= it.tol)
            if it.reference:
                label, factory = it.reference
                ref_us, ry = time_torch(factory(), targs, args.reps, args.warmup_ms / 1e3)
                ref_err = difference(ry)
                row.update(reference=label, reference_us=ref_us, ratio_to_reference=ours_us / ref_us,
                           max_diff_vs_reference=ref_err, reference_agrees=ref_err <= it.tol)
            paths = {ctx.kernel(k).simdgroup_matrix_path for _, k in it.kernels} - {""}
            if paths:
                row["simdgroup_matrix"] = ",".join(sorted(paths))
            if it.nbytes:
                row["gbs"] = it.nbytes / ours_us / 1e3
                row["torch_gbs"] = it.nbytes / torch_us / 1e3
                row["ceiling_fraction"] = row["gbs"] / args.ceiling_gbs
                if it.reference:
                    row["reference_gbs"] = it.nbytes / row["reference_us"] / 1e3
            if it.flops:
                row["tflops"] = it.flops / ours_us / 1e6
                row["torch_tflops"] = it.flops / torch_us / 1e6
                if it.reference:
                    row["reference_tflops"] = it.flops / row["reference_us"] / 1e6
                row["peak_fraction"] = row["tflops"] / args.peak_tflops
        except Exception as e:  # reported in the table, never hidden
            row["error"] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
        rows.append(row)
        print(json.dumps(row), flush=True)
        del ctx
        torch.cuda.empty_cache()


def write_report(prefix, rows, dev, gpu, args):
    with open(prefix + ".json", "w") as f:
        json.dump({"device": dev, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                   "torch": torch.__version__, "gpu": gpu, "reps": args.reps,
                   "ceiling_gbs": args.ceiling_gbs, "peak_tflops": args.peak_tflops, "rows": rows}, f, indent=1)
    with open(prefix + ".md", "w") as f:
        f.write(f"metal2vk device: {dev}; PyTorch {torch.__version__} on {gpu}; "
                f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {args.reps} repetitions after a "
                f"{args.warmup_ms:.0f} ms warm-up, each side.\n\n")
        f.write("| item | metal2vk µs | PyTorch µs | ratio (ours/torch) | ours GB/s or TFLOP/s | of ceiling | "
                "PyTorch GB/s or TFLOP/s | dispatches | outputs agree | simdgroup_matrix |\n"
                "|---|---|---|---|---|---|---|---|---|---|\n")
        for r in rows:
            if "error" in r:
                f.write(f"| {r['item']} | {r['error']} | | | | | | | | |\n")
                continue
            if "tflops" in r:
                rate, frac, trate = f"{r['tflops']:.1f} TFLOP/s", r["peak_fraction"], f"{r['torch_tflops']:.1f}"
            else:
                rate, frac, trate = f"{r['gbs']:.0f} GB/s", r["ceiling_fraction"], f"{r['torch_gbs']:.0f}"
            f.write(f"| {r['item']} | {r['ours_us']:.1f} | {r['torch_us']:.1f} | {r['ratio']:.2f} | {rate} | "
                    f"{frac:.0%} | {trate} | {r['dispatches']} | "
                    f"{'yes' if r['outputs_agree'] else 'NO'} ({r['max_diff_vs_torch']:.1g}) | "
                    f"{r.get('simdgroup_matrix', '')} |\n")
        refs = [r for r in rows if "reference_us" in r]
        if refs:
            f.write("\nThe same items against a second CUDA implementation (bench/cuda_tile_gemm.py for the same-tile "
                    "GEMM, bench/cuda_tile_gemv.py for the same-tile gemv, bench/cuda_same_shape.py for the same-shape "
                    "elementwise and rms_norm kernels, bench/cuda_nax_gemm.py for the same-algorithm NAX GEMM, "
                    "bench/cuda_tile_qmv.py for the same-shape quantized qmv), timed like PyTorch's in the same "
                    "run:\n\n"
                    "| item | reference | metal2vk µs | reference µs | ratio (ours/reference) | ours | "
                    "reference | PyTorch | outputs agree |\n|---|---|---|---|---|---|---|---|---|\n")
            for r in refs:
                unit, key = ("TFLOP/s", "tflops") if "tflops" in r else ("GB/s", "gbs")
                f.write(f"| {r['item']} | {r['reference']} | {r['ours_us']:.1f} | {r['reference_us']:.1f} | "
                        f"{r['ratio_to_reference']:.2f} | {r.get(key, 0):.1f} {unit} | "
                        f"{r.get('reference_' + key, 0):.1f} {unit} | {r.get('torch_' + key, 0):.1f} {unit} | "
                        f"{'yes' if r['reference_agrees'] else 'NO'} ({r['max_diff_vs_reference']:.1g}) |\n")


if __name__ == "__main__":
    sys.exit(main())
