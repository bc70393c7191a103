"""Wide accesses on a checked fast path (lower/WidenAccesses.cpp): a kernel whose adjacent narrow loads and stores
become vector accesses when its buffer addresses and address-scaling integer arguments are multiples of 16 takes the
widened copy only then, and the kernel as written otherwise. Both paths must compute the same thing: buffers bound at
offsets of 0, 1, 2, 4 and 8 elements and row strides that are and are not multiples of 16, and an output bound apart
from its inputs, over one of them, or overlapping one two elements further on (one thread: Metal's order within a
thread decides the result), against numpy."""
import numpy as np
import pytest

import metal2vk as m2v

SOURCE = """
#include <metal_stdlib>
using namespace metal;
// A gemv-like row: four adjacent halves of a row (stride ld) and of x per step.
kernel void row_dot(device const half* m [[buffer(0)]], device const half* x [[buffer(1)]],
                    constant int& ld [[buffer(2)]], constant int& k [[buffer(3)]], device float* out [[buffer(4)]],
                    uint row [[thread_position_in_grid]]) {
  device const half* r = m + row * ld;
  float acc = 0.0f;
  for (int j = 0; j < k; j += 4)
    acc += float(r[j]) * float(x[j]) + float(r[j + 1]) * float(x[j + 1]) + float(r[j + 2]) * float(x[j + 2]) +
           float(r[j + 3]) * float(x[j + 3]);
  out[row] = acc;
}
// Elementwise: the loads of element k + 1 move above the store of element k only when c lies apart from a and b.
kernel void add4(device const half* a [[buffer(0)]], device const half* b [[buffer(1)]], device half* c [[buffer(2)]],
                 uint gid [[thread_position_in_grid]]) {
  uint i = 4 * gid;
  for (int k = 0; k < 4; ++k) c[i + k] = a[i + k] + b[i + k];
}
// A qmv-like walk: a byte pointer advancing by a constant step, read as four uint16 per step; four adjacent stores.
kernel void nibble_sums(device const uint8_t* w [[buffer(0)]], constant int& steps [[buffer(1)]],
                        device half* out [[buffer(2)]], uint gid [[thread_position_in_grid]]) {
  device const uint8_t* p = w + gid * 8;
  uint s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  for (int i = 0; i < steps; ++i) {
    device const uint16_t* q = (device const uint16_t*)p;
    s0 += q[0] & 15; s1 += (q[1] >> 4) & 15; s2 += (q[2] >> 8) & 15; s3 += q[3] >> 12;
    p += 8 * 64;
  }
  out[4 * gid] = half(s0); out[4 * gid + 1] = half(s1); out[4 * gid + 2] = half(s2); out[4 * gid + 3] = half(s3);
}
// Eight halves and eight bfloats per thread (16-byte accesses, as 32-bit words), sixteen bytes per thread.
kernel void scale8_half(device const half* a [[buffer(0)]], device half* c [[buffer(1)]],
                        uint gid [[thread_position_in_grid]]) {
  uint i = 8 * gid;
  for (int k = 0; k < 8; ++k) c[i + k] = a[i + k] * half(k + 1);
}
kernel void scale8_bfloat(device const bfloat* a [[buffer(0)]], device bfloat* c [[buffer(1)]],
                          uint gid [[thread_position_in_grid]]) {
  uint i = 8 * gid;
  for (int k = 0; k < 8; ++k) c[i + k] = bfloat(float(a[i + k]) * float(k + 1));
}
kernel void xor16_bytes(device const uint8_t* a [[buffer(0)]], device uint8_t* c [[buffer(1)]],
                        uint gid [[thread_position_in_grid]]) {
  uint i = 16 * gid;
  for (int k = 0; k < 16; ++k) c[i + k] = a[i + k] ^ uint8_t(k * 17);
}
// Two half4 per thread: the vectorizer's 16-byte access is built of two 4-lane pieces (shuffles).
kernel void swap_half4(device const half4* a [[buffer(0)]], device half4* c [[buffer(1)]],
                       uint gid [[thread_position_in_grid]]) {
  half4 x = a[2 * gid], y = a[2 * gid + 1];
  c[2 * gid] = y.wzyx;
  c[2 * gid + 1] = x + half(1);
}
"""


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    path = tmp_path_factory.mktemp("wide") / "wide.metal"
    path.write_text(SOURCE)
    return m2v.compile_library(str(path))


@pytest.mark.parametrize("offset", [0, 1, 2, 4, 8])
@pytest.mark.parametrize("ld", [64, 68])
def test_row_dot_any_alignment(lib, offset, ld):
    rows, k = 96, 64
    rng = np.random.default_rng(23 + offset + ld)
    m = rng.integers(-8, 9, rows * ld + 16).astype(np.float16) / np.float16(4)
    x = rng.integers(-8, 9, k + 16).astype(np.float16) / np.float16(4)
    s = m2v.Stream()
    mb, xb, ob = s.buffer(m), s.buffer(x), m2v.Buffer(rows * 4)
    s.set_kernel(lib["row_dot"])
    s.set_buffer(mb, 0, 2 * offset)
    s.set_buffer(xb, 1, 2 * offset)
    s.set_bytes(np.int32(ld), 2)
    s.set_bytes(np.int32(k), 3)
    s.set_buffer(ob, 4)
    s.dispatch_threads((rows, 1, 1), (32, 1, 1))
    got = s.read(ob, np.float32, (rows,))
    mm = m[offset:offset + rows * ld].reshape(rows, ld)[:, :k].astype(np.float64)
    want = mm @ x[offset:offset + k].astype(np.float64)
    np.testing.assert_array_equal(got, want.astype(np.float32))  # small integers / 16: exact in float


@pytest.mark.parametrize("offset", [0, 1, 2, 4, 8])
def test_nibble_sums_any_alignment(lib, offset):
    threads, steps = 64, 5
    rng = np.random.default_rng(230 + offset)
    w = rng.integers(0, 256, 8 * 64 * steps + 64, dtype=np.uint8)
    s = m2v.Stream()
    wb, ob = s.buffer(w), m2v.Buffer(4 * threads * 2 + 32)
    s.set_kernel(lib["nibble_sums"])
    s.set_buffer(wb, 0, 2 * offset)  # uint16 loads: 2-byte aligned at least
    s.set_bytes(np.int32(steps), 1)
    s.set_buffer(ob, 2, 2 * offset)
    s.dispatch_threads((threads, 1, 1), (32, 1, 1))
    got = s.read(ob, np.float16, (4 * threads + 16,))[offset:offset + 4 * threads].reshape(threads, 4)
    q = w[2 * offset:2 * offset + 8 * 64 * steps].view(np.uint16).reshape(steps, 64, 4).astype(np.int64)
    want = np.stack([(q[:, :, 0] & 15).sum(0), ((q[:, :, 1] >> 4) & 15).sum(0), ((q[:, :, 2] >> 8) & 15).sum(0),
                     (q[:, :, 3] >> 12).sum(0)], axis=1)
    np.testing.assert_array_equal(got.astype(np.int64), want)


@pytest.mark.parametrize("where", ["apart", "in_place", "overlap_2"])
def test_add4_output_placement(lib, where):
    rng = np.random.default_rng(2300)
    n = 4 * (1 if where == "overlap_2" else 64)  # one thread where elements overlap: a defined order
    buf = np.zeros(n + 64, np.float16)
    buf[:n] = rng.integers(-64, 65, n) / 8
    b = (rng.integers(-64, 65, n + 8) / 8).astype(np.float16)
    s = m2v.Stream()
    ab, bb, cb = s.buffer(buf), s.buffer(b), m2v.Buffer(buf.nbytes)
    s.set_kernel(lib["add4"])
    s.set_buffer(ab, 0)
    s.set_buffer(bb, 1)
    if where == "apart":
        s.set_buffer(cb, 2)
    else:
        s.set_buffer(ab, 2, 0 if where == "in_place" else 4)
    s.dispatch_threads((n // 4, 1, 1), (min(n // 4, 32), 1, 1))
    want = buf.copy()
    shift = {"apart": 0, "in_place": 0, "overlap_2": 2}[where]
    out = np.zeros_like(buf) if where == "apart" else want
    for i in range(n):  # a thread's order: load a[i], load b[i], store c[i]
        out[i + shift] = np.float16(want[i] + b[i]) if where != "apart" else np.float16(buf[i] + b[i])
    got = s.read(cb if where == "apart" else ab, np.float16, (buf.size,))
    np.testing.assert_array_equal(got[:n + shift], out[:n + shift])


def bf16_bits(x):
    """float32 values rounded to bfloat (nearest, ties to even), as bits."""
    b = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    return ((b + 0x7fff + ((b >> 16) & 1)) >> 16).astype(np.uint16)


@pytest.mark.parametrize("offset", [0, 1, 2, 4, 8])
@pytest.mark.parametrize("kind", ["scale8_half", "scale8_bfloat", "xor16_bytes", "swap_half4"])
def test_sixteen_byte_accesses_any_alignment(lib, kind, offset):
    threads = 64
    rng = np.random.default_rng(2301 + offset)
    if kind == "xor16_bytes":
        n, item = 16 * threads, 1
        a = rng.integers(0, 256, n + 64, dtype=np.uint8)
    else:
        n, item = 8 * threads, 2
        vals = (rng.integers(-64, 65, n + 64) / 8).astype(np.float32)
        a = bf16_bits(vals) if kind == "scale8_bfloat" else vals.astype(np.float16)
    s = m2v.Stream()
    ab, cb = s.buffer(a), m2v.Buffer(a.nbytes)
    elem = 4 if kind == "swap_half4" else 1  # half4 buffers: offsets in whole half4s
    s.set_kernel(lib[kind])
    s.set_buffer(ab, 0, item * elem * offset)
    s.set_buffer(cb, 1, item * elem * offset)
    s.dispatch_threads((threads, 1, 1), (32, 1, 1))
    o = elem * offset
    got = s.read(cb, a.dtype, (a.size,))[o:o + n]
    src = a[o:o + n]
    if kind == "xor16_bytes":
        want = src ^ np.tile((np.arange(16) * 17).astype(np.uint8), threads)
    elif kind == "swap_half4":
        v = src.reshape(threads, 2, 4)
        want = np.concatenate([v[:, 1, ::-1], v[:, 0] + np.float16(1)], axis=1).reshape(-1)
    elif kind == "scale8_half":
        want = src * np.tile(np.arange(1, 9, dtype=np.float16), threads)
    else:
        f = (src.astype(np.uint32) << 16).view(np.float32)
        want = bf16_bits(f * np.tile(np.arange(1, 9, dtype=np.float32), threads))  # exact in float, rounded once
    np.testing.assert_array_equal(got, want)
