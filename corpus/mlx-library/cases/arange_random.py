"""arange.metal as Arange::eval_gpu launches it (primitives.cpp: start and step as setBytes of the output type, step
taken as T(start + step) - T(start), one thread per element), and random.metal's threefry bits as RandomBits::eval_gpu
launches them: keys (..., 2) uint32, each key's bytes_per_key output bytes made of ceil(bytes / 4) 32-bit words; a
grid of (keys, half + odd) threads, thread j hashing the counter pair (j, j + half + odd) into words j and
j + half + odd (an odd word count's last thread hashes (half, 0) and keeps the first word only; a partial last word
keeps its low bytes). `rbitsc` for row-contiguous keys, `rbits` (ndim, shape, strides) otherwise.

The reference hash is Threefry-2x32 with 20 rounds written from its definition (Salmon, Moraes, Dror, Shaw, "Parallel
random numbers: as easy as 1, 2, 3", SC 2011): rotation constants 13 15 26 6 17 29 16 24, key schedule parity
0x1BD11BDA, a key injection after every 4 rounds; it is checked against the published known-answer vectors first."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _elemwise_util import View, transposed  # noqa: E402
from mlxhost import block_dims, row_strides  # noqa: E402
from mlxrun import FLOATS, MAX_THREADS, Case, i32, itemsize, load, store, tname, vec  # noqa: E402

# --- arange ---


def arange_case(dt, start, step, n):
    name = "arange" + tname(dt)

    def run(ctx):
        # the host's scalars: T(start) and T(start + step) - T(start), computed in T
        t_start = store([start], dt)
        if dt in FLOATS:
            t_next = store([start + step], dt)
            t_step = store(load(t_next, dt) - load(t_start, dt), dt)  # exact: both are in T's range and grid
        else:
            t_step = store([step], dt)
        out = ctx.empty(n * itemsize(dt))
        ctx.launch(name, {0: t_start, 1: t_step, 2: out}, grid=(n,), threadgroup=(min(n, MAX_THREADS),))
        got = ctx.read(out, dt, n)
        want = start + np.arange(n, dtype=np.float64 if dt in FLOATS else np.int64) * step
        if dt in FLOATS:
            ctx.check("out", got, want, dt=dt)
        else:
            ctx.check_exact("out", np.asarray(got).astype(np.int64), want)

    return Case(f"arange.arange.{dt}.{n}", "arange", "arange.metal", [name], run, note=f"start {start} step {step}")


# --- threefry ---
M32 = 0xFFFFFFFF
ROT = (13, 15, 26, 6, 17, 29, 16, 24)


def threefry2x32(k0, k1, c0, c1, rounds=20):
    """Threefry-2x32: key (k0, k1), counter (c0, c1) -> two 32-bit words (numpy arrays, broadcast)."""
    u = np.uint64
    m = u(M32)
    k0, k1, c0, c1 = (np.asarray(v, dtype=u) & m for v in (k0, k1, c0, c1))
    ks = (k0, k1, (k0 ^ k1 ^ u(0x1BD11BDA)) & m)
    x0, x1 = (c0 + ks[0]) & m, (c1 + ks[1]) & m
    for r in range(rounds):
        x0 = (x0 + x1) & m
        rot = ROT[r % 8]
        x1 = ((x1 << u(rot)) | (x1 >> u(32 - rot))) & m
        x1 ^= x0
        if r % 4 == 3:  # key injection s = 1 .. 5
            s = r // 4 + 1
            x0 = (x0 + ks[s % 3]) & m
            x1 = (x1 + ks[(s + 1) % 3] + u(s)) & m
    return x0.astype(np.uint32), x1.astype(np.uint32)


# Known-answer vectors of Threefry-2x32-20 (Random123's kat_vectors): (key, counter) -> output
KAT = [((0x00000000, 0x00000000), (0x00000000, 0x00000000), (0x6B200159, 0x99BA4EFE)),
       ((0xFFFFFFFF, 0xFFFFFFFF), (0xFFFFFFFF, 0xFFFFFFFF), (0x1CB996FC, 0xBB002BE7)),
       ((0x13198A2E, 0x03707344), (0x243F6A88, 0x85A308D3), (0xC4923A9C, 0x483DF7A0))]


def check_kat():
    for (k0, k1), (c0, c1), want in KAT:
        got = tuple(int(v) for v in threefry2x32(k0, k1, c0, c1))
        if got != want:
            raise RuntimeError(f"threefry reference fails its known-answer vector: {got} != {want}")


def random_bits_reference(keys, bytes_per_key):
    """keys: (num_keys, 2) uint32 -> (num_keys, bytes_per_key) uint8, what MLX's random bits mean."""
    words = (bytes_per_key + 3) // 4
    half, odd = words // 2, words % 2
    h = half + odd
    out = np.zeros((len(keys), 4 * words), dtype=np.uint8)
    j = np.arange(half, dtype=np.uint64)
    for n, (k0, k1) in enumerate(keys):
        w = np.zeros(words, dtype=np.uint32)
        x, y = threefry2x32(k0, k1, j, j + np.uint64(h))
        w[:half] = x
        w[h:h + half] = y
        if odd:
            w[half] = threefry2x32(k0, k1, half, 0)[0]
        out[n] = w.astype("<u4").view(np.uint8)
    return out[:, :bytes_per_key]


def random_case(num_keys_shape, out_dt, elems_per_key, key_layout=None, label=""):
    """key_layout: None (row-contiguous keys (..., 2)) or a View of the keys' logical shape over their buffer."""
    num_keys = int(np.prod(num_keys_shape))
    bytes_per_key = itemsize(out_dt) * elems_per_key
    words = (bytes_per_key + 3) // 4
    half, odd = words // 2, words % 2
    kview = key_layout or View(list(num_keys_shape) + [2])
    name = "rbitsc" if kview.row_contiguous else "rbits"

    def run(ctx):
        check_kat()
        kbuf, kbase = ctx.rand((kview.extent,), "u32", 0, M32)
        keys = kview.values(kbase).reshape(-1, 2)
        out = ctx.empty(num_keys * bytes_per_key)
        args = {0: kbuf, 1: out, 2: np.bool_(odd), 3: np.uint64(bytes_per_key)}
        if name == "rbits":
            args.update({4: i32(len(kview.shape)), 5: vec(kview.shape, np.int32), 6: vec(kview.strides, np.int64)})
        grid = (num_keys, half + odd, 1)
        ctx.launch(name, args, grid=grid, threadgroup=block_dims(*grid))
        got = ctx.read(out, "u8", num_keys * bytes_per_key).reshape(num_keys, bytes_per_key)
        want = random_bits_reference(keys, bytes_per_key)
        ctx.check_exact("bits", got, want)

    shape = "x".join(map(str, list(num_keys_shape) + [elems_per_key]))
    return Case(f"random.{name}{label}.{out_dt}.{shape}", "random", "random.metal", [name], run,
                note=f"bytes_per_key {bytes_per_key}, odd {odd}")


def cases():
    yield arange_case("f32", 0.1, 0.3, 100003)
    yield arange_case("f16", -3.5, 0.25, 1500)
    yield arange_case("bf16", 2.0, -0.5, 300)
    yield arange_case("i32", -1000, 7, 1000)
    yield arange_case("i64", 5_000_000_000, -3, 4097)
    yield arange_case("u8", 3, 2, 100)
    # one key: even and odd word counts
    yield random_case([1], "u32", 1000)
    yield random_case([1], "u32", 1001, label="_odd")
    # several keys; byte counts that leave a partial last word (37 bytes: 10 words, even; 90 bytes: 23, odd)
    yield random_case([5], "u8", 37, label="_edge")
    yield random_case([3], "u16", 45, label="_edge_odd")
    yield random_case([2, 3], "u32", 64, label="_keys2d")
    # keys that are not row-contiguous: the transpose of a (2, n) array, and a 3-D transpose
    yield random_case([4], "u32", 257, key_layout=transposed([2, 4], [1, 0]), label="_odd")
    yield random_case([3, 2], "u8", 20, key_layout=transposed([2, 3, 2], [1, 2, 0]), label="_keys3d")
