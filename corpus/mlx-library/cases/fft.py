"""FFTs (fft.metal), launched as mlx/backend/metal/fft.cpp launches them, complex64 (and float32 for real input or
output). One dispatch per 1-D transform along the last (contiguous) axis:
- `fft_mem_*`: Stockham mixed-radix FFT in threadgroup memory (n <= 4096 whose prime factors are all radices
  13, 11, 8, 7, 6, 5, 4, 3, 2), with the radix plan, elements per thread and threadgroup batching the host computes,
  passed as function constants;
- `rader_fft_mem_*`: one prime factor p <= 2048 outside the radices with p - 1 Stockham-decomposable (Rader), with
  the host's b_q / g_q / g_minus_q tables;
- `bluestein_fft_mem_*`: other n <= 2048 (Bluestein on a power-of-two length), with the host's w_q / w_k tables;
- `four_step_mem_*`: powers of two above 4096, two dispatches (n1 columns, then n2 rows) through a complex64 temp;
- real input (rfft: float -> float2, two transforms per thread column) and real output (irfft: float2 -> float);
- inverse transforms (numpy's ifft scaling, 1/n).
References: numpy's FFT in float64 on the inputs as stored; errors are measured relative to the output's RMS (an
FFT's float32 error scales with the signal's norm, not with each output element)."""
import math

import numpy as np

from mlxhost import mlx_buffer_size, padded_to_page
from mlxrun import Case, i32

FILE = "fft.metal"

MAX_STOCKHAM_FFT_SIZE = 4096
MAX_RADER_FFT_SIZE = 2048
MAX_BLUESTEIN_FFT_SIZE = 2048
MIN_THREADGROUP_MEM_SIZE = 256
MIN_COALESCE_WIDTH = 4
BLUESTEIN_TWIDDLE_TABLE_FFT_SIZE = 4096
BLUESTEIN_TWIDDLE_TABLE_SIZE = 584
MIN_BLUESTEIN_TWIDDLE_TABLE_BATCH = 1024
RADICES = [13, 11, 8, 7, 6, 5, 4, 3, 2]  # the host's order of preference


def is_pow2(n):
    return n > 0 and (n & (n - 1)) == 0


def next_pow2(n):
    return 1 << (int(n) - 1).bit_length() if n > 1 else 1


def prime_factors(n):
    out, z = [], 2
    while z * z <= n:
        if n % z == 0:
            out.append(z)
            n //= z
        else:
            z += 1
    if n > 1:
        out.append(n)
    return out


def plan_stockham(n):
    """Steps per radix (in RADICES order); powers of two below 512 use only radices 4 and 2."""
    plan = [0] * len(RADICES)
    if n == 1:
        return plan
    rest = n
    for i, r in enumerate(RADICES):
        if is_pow2(n) and n < 512 and r > 4:
            continue
        while rest % r == 0:
            plan[i] += 1
            rest //= r
            if rest == 1:
                return plan
    raise ValueError(f"{n} is not Stockham-decomposable")


class Plan:
    def __init__(self, n):
        self.n = n
        self.stockham = [0] * len(RADICES)
        self.rader = [0] * len(RADICES)
        self.rader_n = 1
        self.bluestein_n = -1
        self.four_step = False
        self.n1 = self.n2 = 0


def plan_fft(n):
    p = Plan(n)
    if n > MAX_STOCKHAM_FFT_SIZE and is_pow2(n):
        p.four_step = True
        p.n2 = 1024 if n > 65536 else 64
        p.n1 = n // p.n2
        if p.n1 > MAX_STOCKHAM_FFT_SIZE:
            p.n1 = MAX_STOCKHAM_FFT_SIZE
            p.n2 = n // p.n1
        return p
    if n > MAX_STOCKHAM_FFT_SIZE:
        raise NotImplementedError("multi-upload Bluestein is not in this suite")
    remaining = n

    def bluestein():
        p.four_step = n > MAX_BLUESTEIN_FFT_SIZE
        p.bluestein_n = next_pow2(2 * n - 1)
        p.stockham = plan_stockham(p.bluestein_n)
        p.rader = [0] * len(RADICES)
        return p

    for f in prime_factors(n):
        if f in RADICES:
            continue
        if p.rader_n > 1 or n > MAX_RADER_FFT_SIZE:
            return bluestein()
        if any(rf not in RADICES for rf in prime_factors(f - 1)):
            return bluestein()
        p.rader = plan_stockham(f - 1)
        p.rader_n = f
        remaining //= f
    p.stockham = plan_stockham(remaining)
    return p


def elems_per_thread(p):
    steps = p.stockham + p.rader
    used = sorted({RADICES[i % len(RADICES)] for i, s in enumerate(steps) if s > 0})
    if 7 in used and (11 in used or 13 in used):
        return 7
    if 11 in used and 13 in used:
        return 11
    special = {3159: 13, 3645: 5, 3969: 7, 1982: 5}
    if p.n in special:
        return special[p.n]
    if len(used) == 1:
        return used[0]
    if len(used) == 2 and (11 in used or 13 in used):
        return sum(used) // 2
    return used[1]


def primitive_root(p):
    fs = prime_factors(p - 1)
    for r in range(2, p - 1):
        if all(pow(r, (p - 1) // f, p) != 1 for f in fs):
            return r
    return -1


def rader_tables(p):
    """b_q: the forward DFT of exp(-2 pi i g^-q / p); g_q = g^q mod p, g_minus_q = g^-q mod p (int16)."""
    g = primitive_root(p)
    inv = pow(g, p - 2, p)
    g_q = np.array([pow(g, i, p) for i in range(p - 1)], dtype=np.int16)
    g_minus_q = np.array([pow(inv, i, p) for i in range(p - 1)], dtype=np.int16)
    b = np.exp(-2j * np.pi * g_minus_q.astype(np.float64) / p)
    return np.fft.fft(b).astype(np.complex64), g_q, g_minus_q


def bluestein_tables(n, bn):
    """w_k = exp(-i pi k^2 / n), k < n; w_q = DFT_bn of exp(+i pi j^2 / n), j = -n+1..n-1 placed at j + n - 1."""
    k = np.arange(n, dtype=np.int64)
    w_k = np.exp(-1j * np.pi * ((k * k) % (2 * n)) / n)
    j = np.arange(-n + 1, n, dtype=np.int64)
    wq_in = np.zeros(bn, dtype=np.complex128)
    wq_in[j + n - 1] = np.exp(1j * np.pi * ((j * j) % (2 * n)) / n)
    return w_k.astype(np.complex64), np.fft.fft(wq_in).astype(np.complex64)


def cbuf(ctx, values):
    """complex64 values in a buffer of the length MLX's allocator gives (the kernels read a little past the end of
    a partial last threadgroup's transforms)."""
    return ctx.buffer(padded_to_page(np.asarray(values, dtype=np.complex64)))


def out_buf(ctx, nbytes):
    return ctx.empty(mlx_buffer_size(nbytes))


def kernel_name(p, n, real, inverse, four_step=None):
    """The base name fft_op picks (function constants specialise it), and the launch geometry."""
    fft_size = p.bluestein_n if p.bluestein_n > 0 else n
    tg_batch = max(MIN_THREADGROUP_MEM_SIZE // fft_size, 1)
    if four_step is not None:
        tg_batch = max(tg_batch, min(MIN_COALESCE_WIDTH, MAX_STOCKHAM_FFT_SIZE // fft_size))
    mem = next_pow2(tg_batch * fft_size)
    in_t = "float" if (real and not inverse and (four_step is None or four_step == 0)) else "float2"
    out_t = "float" if (real and inverse and (four_step is None or four_step == 1)) else "float2"
    if p.bluestein_n > 0:
        name = f"bluestein_fft_mem_{mem}_{in_t}_{out_t}"
    elif p.rader_n > 1:
        name = f"rader_fft_mem_{mem}_{in_t}_{out_t}"
    elif four_step is not None:
        name = f"four_step_mem_{mem}_{in_t}_{out_t}_{four_step}_{'true' if real else 'false'}"
    else:
        name = f"fft_mem_{mem}_{in_t}_{out_t}"
    return name, fft_size, tg_batch


def launch_fft_op(ctx, src, out, n_axis, size, inverse, real, four_step=None):
    """fft_op on a contiguous batch of transforms along the last axis. n_axis: the transform length (the real side's
    length for rfft/irfft); size: the element count fft_op uses for the batch (the real side's for rfft/irfft, the
    temp's for a four-step's complex side). four_step: None, or (step, n1, n2). Returns the kernel names."""
    n = n_axis
    if four_step is not None:
        step, n1, n2 = four_step
        n = n1 if step == 0 else n2
    p = plan_fft(n)
    if p.four_step:
        assert four_step is None and p.bluestein_n < 0
        temp = out_buf(ctx, size * 8)  # complex64, the real side's shape (size is the real-side element count)
        names = launch_fft_op(ctx, src, temp, n_axis, size, inverse, real, (0, p.n1, p.n2))
        names += launch_fft_op(ctx, temp, out, n_axis, size, inverse, real, (1, p.n1, p.n2))
        return names
    name, fft_size, tg_batch = kernel_name(p, n, real, inverse, None if four_step is None else four_step[0])
    consts = {0: bool(inverse), 1: is_pow2(fft_size)}
    for i, s in enumerate(p.stockham):
        consts[4 + i] = int(s)
    for i, s in enumerate(p.rader):
        consts[13 + i] = int(s)
    ept = elems_per_thread(p)
    consts[2] = ept
    consts[3] = n // p.rader_n
    total = size // n
    use_table = (not real and p.bluestein_n == BLUESTEIN_TWIDDLE_TABLE_FFT_SIZE and
                 p.stockham == [0, 0, 4, 0, 0, 0, 0, 0, 0] and total >= MIN_BLUESTEIN_TWIDDLE_TABLE_BATCH)
    if p.bluestein_n > 0 and not real:
        consts[22] = use_table
    threads_per_fft = -(-fft_size // ept)
    batch = -(-total // tg_batch)
    if real and four_step is None:
        batch = -(-batch // 2)  # two real transforms per thread column
    names = [name]
    if p.bluestein_n > 0:
        w_k, w_q = bluestein_tables(n, p.bluestein_n)
        if use_table:
            # w_q gets BLUESTEIN_TWIDDLE_TABLE_SIZE more entries, which generate_bluestein_twiddles fills with the
            # radix-8 Stockham twiddles (one thread each) before the transform reads them.
            w_q = np.concatenate([w_q, np.zeros(BLUESTEIN_TWIDDLE_TABLE_SIZE, np.complex64)])
            wq_buf = cbuf(ctx, w_q)
            ctx.launch("generate_bluestein_twiddles", {0: (wq_buf, p.bluestein_n * 8)},
                       grid=(BLUESTEIN_TWIDDLE_TABLE_SIZE,), threadgroup=(min(BLUESTEIN_TWIDDLE_TABLE_SIZE, 1024),))
            names.insert(0, "generate_bluestein_twiddles")
        else:
            wq_buf = cbuf(ctx, w_q)
        args = {0: src, 1: out, 2: wq_buf, 3: cbuf(ctx, w_k), 4: np.uint64(n), 5: i32(p.bluestein_n),
                6: i32(total)}
    elif p.rader_n > 1:
        b_q, g_q, g_minus_q = rader_tables(p.rader_n)
        args = {0: src, 1: out, 2: cbuf(ctx, b_q), 3: ctx.buffer(padded_to_page(g_q)),
                4: ctx.buffer(padded_to_page(g_minus_q)), 5: np.uint64(n), 6: i32(total), 7: i32(p.rader_n)}
    elif four_step is not None:
        args = {0: src, 1: out, 2: i32(four_step[1]), 3: i32(four_step[2]), 4: i32(total)}
    else:
        args = {0: src, 1: out, 2: np.uint64(n), 3: i32(total)}  # n is a size_t on the host: 8 bytes
    ctx.launch(name, args, grid=(batch, tg_batch, threads_per_fft), threadgroup=(1, tg_batch, threads_per_fft),
               constants=consts)
    return names


def kernels_for(n, inverse, real, batch=1):
    p = plan_fft(n)
    if (not real and p.bluestein_n == BLUESTEIN_TWIDDLE_TABLE_FFT_SIZE and p.stockham == [0, 0, 4, 0, 0, 0, 0, 0, 0]
            and batch >= MIN_BLUESTEIN_TWIDDLE_TABLE_BATCH):
        return ["generate_bluestein_twiddles", kernel_name(p, n, real, inverse)[0]]
    if p.four_step:
        out = []
        for step in (0, 1):
            q = plan_fft(p.n1 if step == 0 else p.n2)
            out.append(kernel_name(q, p.n1 if step == 0 else p.n2, real, inverse, step)[0])
        return out
    return [kernel_name(p, n, real, inverse)[0]]


def check_rms(ctx, label, got, want, tol):
    scale = float(np.sqrt(np.mean(np.abs(want) ** 2))) or 1.0
    g = np.concatenate([got.real.reshape(-1), got.imag.reshape(-1)]) / scale
    w = np.concatenate([np.real(want).reshape(-1), np.imag(want).reshape(-1)]) / scale
    ctx.check(label, g, w, tol=tol)


def fft_case(kind, batch, n, tol=None, budget_scale=1):
    """kind: fft, ifft, rfft, irfft."""
    inverse = kind in ("ifft", "irfft")
    real = kind in ("rfft", "irfft")
    names = kernels_for(n, inverse, real, batch)
    p = plan_fft(n)
    table = names[0] == "generate_bluestein_twiddles"
    variant = ("four_step" if p.four_step else "bluestein_table" if table else "bluestein" if p.bluestein_n > 0 else
               "rader" if p.rader_n > 1 else "stockham")
    # float32 FFT error grows like log2(n) * eps relative to the signal's RMS; Bluestein's three passes and
    # float32 twiddle tables add a few more ulps.
    if tol is None:
        tol = 2e-6 * max(1, math.log2(n)) * (4 if p.bluestein_n > 0 else 1)

    def run(ctx):
        nh = n // 2 + 1
        if kind == "rfft":
            _, x = ctx.rand((batch, n), "f32")
            src = ctx.buffer(padded_to_page(x.astype(np.float32)))
            out = out_buf(ctx, batch * nh * 8)
            launch_fft_op(ctx, src, out, n, batch * n, False, True)
            got = ctx.read(out, "f32", (batch, nh, 2))
            check_rms(ctx, "out", got[..., 0] + 1j * got[..., 1], np.fft.rfft(x, axis=-1), tol)
            return
        if kind == "irfft":
            # A Hermitian spectrum (the rfft of a real signal) as complex64.
            _, sig = ctx.rand((batch, n), "f32")
            spec = np.fft.rfft(sig, axis=-1).astype(np.complex64)
            src = cbuf(ctx, spec)
            out = out_buf(ctx, batch * n * 4)
            launch_fft_op(ctx, src, out, n, batch * n, True, True)
            got = ctx.read(out, "f32", (batch, n))
            check_rms(ctx, "out", got + 0j, np.fft.irfft(spec.astype(np.complex128), n=n, axis=-1), tol)
            return
        _, parts = ctx.rand((batch, n, 2), "f32")
        x = parts[..., 0] + 1j * parts[..., 1]
        src = cbuf(ctx, x)
        out = out_buf(ctx, batch * n * 8)
        launch_fft_op(ctx, src, out, n, batch * n, inverse, False)
        got = ctx.read(out, "f32", (batch, n, 2))
        want = np.fft.ifft(x, axis=-1) if inverse else np.fft.fft(x, axis=-1)
        check_rms(ctx, "out", got[..., 0] + 1j * got[..., 1], want, tol)

    return Case(f"fft.{kind}_{variant}.c64.{batch}x{n}", "fft", FILE, names, run, budget_scale=budget_scale)


def cases():
    yield fft_case("fft", 5, 8)            # radices 4, 2; 32 transforms per threadgroup; partial last group
    yield fft_case("fft", 3, 256)          # 4^4
    yield fft_case("fft", 2, 1024)         # 8^3 * 2 (powers of two from 512 use radix 8)
    yield fft_case("fft", 2, 4096)         # the largest single-threadgroup size
    yield fft_case("ifft", 8, 64)          # 4 transforms per threadgroup, all threadgroups full
    yield fft_case("ifft", 7, 64)          # partial last threadgroup (3 of 4 live rows)
    yield fft_case("fft", 4, 360)          # mixed radix 8, 5, 3
    yield fft_case("fft", 3, 1001)         # 13 * 11 * 7
    yield fft_case("ifft", 3, 100)         # 5, 5, 4
    yield fft_case("fft", 4, 17)           # Rader (16 = 4 * 4)
    yield fft_case("fft", 2, 51)           # Rader 17 with a radix-3 Stockham part
    yield fft_case("fft", 4, 47)           # Bluestein (46 = 2 * 23 has a non-radix factor): length 128
    yield fft_case("fft", 3, 47)           # the same with a partial last threadgroup
    yield fft_case("ifft", 2, 1019)        # Bluestein (1018 = 2 * 509), length 2048
    # Bluestein length 4096, >= 1024 transforms: precomputed twiddle table. The longest case: seconds on a CPU device.
    yield fft_case("fft", 1024, 1031, budget_scale=4)
    yield fft_case("rfft", 8, 128)         # two real transforms per thread column
    yield fft_case("rfft", 6, 128)         # ... and a partial last threadgroup
    yield fft_case("rfft", 5, 360)         # odd transform count
    yield fft_case("irfft", 4, 256)
    yield fft_case("irfft", 3, 30)
    yield fft_case("fft", 2, 8192)         # four step: 128 x 64
    yield fft_case("ifft", 1, 16384)       # four step: 256 x 64
    yield fft_case("fft", 1, 131072)       # four step above 65536: 128 x 1024 (4 rows per threadgroup, 4096 mem)
    yield fft_case("rfft", 2, 8192)        # real four step
    yield fft_case("irfft", 2, 8192)
