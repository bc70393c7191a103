"""float -> bfloat narrowing on both builds: the portable one (an integer round-to-nearest-even sequence) and the
native-bfloat16 one (OpFConvert to VK_KHR_shader_bfloat16's bfloat16 type; docs/BFLOAT16.md).

Each kernel runs with the default (the portable build) and, where M2V_NATIVE_BFLOAT16=1 asks for it, once more with
the native build (compiled and run where the device has shaderBFloat16Type). Both must give the bits of numpy's
round-to-nearest-even narrowing of the same float values, and so each other's, except that a NaN may come back as any
quiet NaN. The Vulkan specification leaves the rounding of a narrowing OpFConvert to the implementation, and the
native build asks for round-to-nearest-even (RoundingModeRTE): this test is what says a device's rounding is the one
Metal's bfloat has. On the H200 (driver 580.159.04) it is not: the conversion truncates, mode or not
(docs/BFLOAT16.md), which is why the native build is opt-in. The native half is skipped, saying why, unless
M2V_NATIVE_BFLOAT16=1 and the device has the type and the rounding mode."""

import os

import numpy as np
import pytest

import metal2vk as m2v
from conftest import bind_arrays

SOURCE = """
#include <metal_stdlib>
using namespace metal;

[[kernel]] void narrow1(device const float* in [[buffer(0)]], device bfloat* out [[buffer(1)]],
                        uint i [[thread_position_in_grid]]) {
  out[i] = bfloat(in[i]);
}

[[kernel]] void narrow2(device const float2* in [[buffer(0)]], device bfloat2* out [[buffer(1)]],
                        uint i [[thread_position_in_grid]]) {
  out[i] = bfloat2(in[i]);
}

[[kernel]] void narrow4(device const float4* in [[buffer(0)]], device bfloat4* out [[buffer(1)]],
                        uint i [[thread_position_in_grid]]) {
  out[i] = bfloat4(in[i]);
}

// MLX's unary kernels in bfloat: widen, compute in float, narrow. The float results are written too, so the
// reference rounds exactly the values the device computed (its exp need not match numpy's to the last bit).
[[kernel]] void exp_silu(device const bfloat* in [[buffer(0)]], device bfloat* e [[buffer(1)]],
                         device bfloat* s [[buffer(2)]], device float* ef [[buffer(3)]],
                         device float* sf [[buffer(4)]], uint i [[thread_position_in_grid]]) {
  float x = float(in[i]);
  float ex = metal::precise::exp(x);
  float si = x / (1.0f + metal::precise::exp(-x));
  ef[i] = ex;
  sf[i] = si;
  e[i] = bfloat(ex);
  s[i] = bfloat(si);
}

// bfloat arithmetic rounds each result: the product of two bfloats is exact in float, so only the narrowing rounds.
[[kernel]] void mul4(device const bfloat4* a [[buffer(0)]], device const bfloat4* b [[buffer(1)]],
                     device bfloat4* out [[buffer(2)]], uint i [[thread_position_in_grid]]) {
  out[i] = a[i] * b[i];
}
"""

THREADS = 64


def rne_bits(f32):
    """numpy's float32 -> bfloat bits, round to nearest even; NaNs made quiet (the reference for non-NaN lanes)."""
    bits = np.ascontiguousarray(f32, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    quiet = (bits | 0x00400000) >> 16
    return np.where(np.isnan(f32), quiet, rounded).astype(np.uint16)


def is_quiet_nan(b16):
    b16 = np.asarray(b16, dtype=np.uint16)
    return ((b16 & 0x7F80) == 0x7F80) & ((b16 & 0x7F) != 0) & ((b16 & 0x40) != 0)


def assert_same_bits(got, want, what):
    """bit equality, except that where `want` is a NaN `got` must be some quiet NaN"""
    got, want = np.asarray(got, np.uint16).ravel(), np.asarray(want, np.uint16).ravel()
    nan = ((want & 0x7F80) == 0x7F80) & ((want & 0x7F) != 0)
    bad_nan = np.flatnonzero(nan & ~is_quiet_nan(got))
    bad = np.flatnonzero(~nan & (got != want))
    lines = [f"{what}: {len(bad)} values rounded differently, {len(bad_nan)} NaNs not quiet NaNs"]
    for k in list(bad[:12]) + list(bad_nan[:4]):
        lines.append(f"  [{k}] got 0x{int(got[k]):04x}, want 0x{int(want[k]):04x}")
    assert len(bad) == 0 and len(bad_nan) == 0, "\n".join(lines)


def special_floats():
    """Bit patterns where rounding is easy to get wrong, both signs."""
    pos = []
    for hi in (0x3F80, 0x3F81, 0x4049, 0x0080, 0x0081, 0x7F7E, 0x7F7F, 0x0000, 0x0001, 0x007F):
        for lo in (0x0000, 0x0001, 0x7FFF, 0x8000, 0x8001, 0xFFFF):
            pos.append((hi << 16) | lo)  # ties to even and odd, just under and over, exact
    pos += [0x00000001, 0x00008000, 0x00018000, 0x00017FFF, 0x007FFFFF, 0x007F8000, 0x00400000]  # subnormals
    pos += [0x7F7FFFFF, 0x7F7F8000, 0x7F7F7FFF, 0x7F7EFFFF]  # largest floats: round up to infinity, or not
    pos += [0x7F800000]  # infinity
    pos += [0x7FC00000, 0x7F800001, 0x7F80FFFF, 0x7FBFFFFF, 0x7FFFFFFF, 0x7FC0FFFF, 0x7F818000]  # NaNs
    bits = np.array(pos, dtype=np.uint32)
    return np.concatenate([bits, bits | np.uint32(0x80000000)]).view(np.float32)


def make_values():
    """Every float bit pattern class: specials, then random bit patterns over the whole range."""
    rng = np.random.default_rng(20261202)
    rand = rng.integers(0, 2**32, size=8192, dtype=np.uint64).astype(np.uint32).view(np.float32)
    return np.concatenate([special_floats(), rand])


VALUES = make_values()


def padded(a, multiple):
    n = -len(a) % multiple
    return np.concatenate([a, np.zeros(n, a.dtype)]) if n else a


@pytest.fixture(scope="module")
def source_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("native_bf16") / "native_bf16.metal"
    path.write_text(SOURCE)
    return str(path)


OPTED_IN = os.environ.get("M2V_NATIVE_BFLOAT16") == "1"


@pytest.fixture(params=["integer", "native"])
def build(request):
    """Runs a test once per narrowing: M2V_NATIVE_BFLOAT16 unset (the portable build) and =1 (the native build; only
    when the run asked for it with M2V_NATIVE_BFLOAT16=1 and the device has the bfloat16 type). Read when a kernel is
    compiled and loaded; restored afterwards."""
    if request.param == "native" and not OPTED_IN:
        pytest.skip("the native-bfloat16 build is opt-in (M2V_NATIVE_BFLOAT16=1): on the H200 its conversion "
                    "truncates (docs/BFLOAT16.md)")
    info = m2v.device_info()
    if request.param == "native" and not (info.get("bfloat16_type") and info.get("rounding_mode_rte_float16")):
        pytest.skip(info["name"] + " lacks VK_KHR_shader_bfloat16's shaderBFloat16Type or float controls' "
                    "shaderRoundingModeRTEFloat16: the native-bfloat16 build cannot run here (its portable build runs "
                    "instead, tested by the 'integer' case)")
    old = os.environ.get("M2V_NATIVE_BFLOAT16")
    if request.param == "integer":
        os.environ.pop("M2V_NATIVE_BFLOAT16", None)
    else:
        os.environ["M2V_NATIVE_BFLOAT16"] = "1"
    yield request.param
    if old is None:
        os.environ.pop("M2V_NATIVE_BFLOAT16", None)
    else:
        os.environ["M2V_NATIVE_BFLOAT16"] = old


def kernel_for(source_path, name, build):
    # a library of its own per test: the build is chosen when its kernel is first loaded
    k = m2v.compile_library(source_path, entries=[name])[name]
    if build == "native":
        assert k.native_bfloat16_spirv is not None, name + " narrows to bfloat: it should have a native-bfloat16 build"
    else:
        assert k.native_bfloat16_spirv is None, "the native-bfloat16 build is compiled only when asked for"
    assert k.bfloat_narrowing == ("native" if build == "native" else "")
    return k


def run(kernel, inputs, outputs, count):
    """inputs: arrays; outputs: (dtype, element count); `count` threads. Returns the output arrays."""
    s = m2v.Stream()
    s.set_kernel(kernel)
    bind_arrays(s, inputs)
    outs = []
    for j, (dtype, n) in enumerate(outputs):
        b = m2v.Buffer(n * np.dtype(dtype).itemsize)
        s.set_buffer(b, len(inputs) + j)
        outs.append((b, dtype, n))
    s.dispatch_threadgroups((count // THREADS, 1, 1), (THREADS, 1, 1))
    return [s.read(b, dtype, (n,)) for b, dtype, n in outs]


@pytest.mark.parametrize("width", [1, 2, 4])
def test_narrowing(source_path, build, width):
    x = padded(VALUES, THREADS * width)
    (got,) = run(kernel_for(source_path, f"narrow{width}", build), [x], [(np.uint16, len(x))], len(x) // width)
    assert_same_bits(got, rne_bits(x), f"narrow{width} ({build})")


def test_exp_silu(source_path, build):
    rng = np.random.default_rng(7)
    xs = np.concatenate([rng.uniform(-80, 80, 4096), rng.normal(0, 3, 4096), [0.0, -0.0, 88.0, -80.0]])
    xs = padded(xs.astype(np.float32), THREADS)
    x_bits = rne_bits(xs)
    n = len(xs)
    e, s, ef, sf = run(kernel_for(source_path, "exp_silu", build), [x_bits],
                       [(np.uint16, n), (np.uint16, n), (np.float32, n), (np.float32, n)], n)
    assert_same_bits(e, rne_bits(ef), f"bfloat(exp) ({build})")
    assert_same_bits(s, rne_bits(sf), f"bfloat(silu) ({build})")
    # and the float values are the functions (loosely: the device's exp is its own)
    x = (x_bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    np.testing.assert_allclose(ef, np.exp(x), rtol=1e-5, atol=0)
    np.testing.assert_allclose(sf, x / (1 + np.exp(-x)), rtol=1e-5, atol=1e-30)


def test_bfloat_product(source_path, build):
    rng = np.random.default_rng(11)
    n = THREADS * 4 * 64
    a = rne_bits(rng.normal(0, 1, n).astype(np.float32) * np.float32(2.0) ** rng.integers(-40, 40, n))
    b = rne_bits(rng.normal(0, 1, n).astype(np.float32) * np.float32(2.0) ** rng.integers(-40, 40, n))
    (got,) = run(kernel_for(source_path, "mul4", build), [a, b], [(np.uint16, n)], n // 4)
    fa = (a.astype(np.uint32) << 16).view(np.float32)
    fb = (b.astype(np.uint32) << 16).view(np.float32)
    with np.errstate(over="ignore", under="ignore"):
        assert_same_bits(got, rne_bits(fa * fb), f"bfloat4 * bfloat4 ({build})")


def opted_in_compile(source_path, name):
    """`name` compiled with M2V_NATIVE_BFLOAT16=1 (so with its native-bfloat16 build); the variable restored."""
    old = os.environ.get("M2V_NATIVE_BFLOAT16")
    os.environ["M2V_NATIVE_BFLOAT16"] = "1"
    try:
        return m2v.compile_library(source_path, entries=[name])[name]
    finally:
        if old is None:
            os.environ.pop("M2V_NATIVE_BFLOAT16", None)
        else:
            os.environ["M2V_NATIVE_BFLOAT16"] = old


def test_builds_differ_only_in_narrowing(source_path):
    k = opted_in_compile(source_path, "narrow1")
    portable, native = k.reflection, k.native_bfloat16_reflection
    assert "BFloat16TypeKHR" in native["capabilities"] and "SPV_KHR_bfloat16" in native["extensions"]
    assert "BFloat16TypeKHR" not in portable["capabilities"]
    assert "BFloat16CooperativeMatrixKHR" not in native["capabilities"]
    strip = {"capabilities", "extensions"}
    assert {k_: v for k_, v in portable.items() if k_ not in strip} == {
        k_: v for k_, v in native.items() if k_ not in strip}


def test_device_without_bfloat16_type_runs_portable_build(source_path):
    if m2v.device_info().get("bfloat16_type"):
        pytest.skip(m2v.device_info()["name"] + " has shaderBFloat16Type: asked for, its native build runs there")
    k = opted_in_compile(source_path, "narrow1")
    old = os.environ.get("M2V_NATIVE_BFLOAT16")
    os.environ["M2V_NATIVE_BFLOAT16"] = "1"
    try:
        assert k.native_bfloat16_spirv is not None and k.bfloat_narrowing == "integer"
        x = padded(VALUES, THREADS)
        (got,) = run(k, [x], [(np.uint16, len(x))], len(x))
        assert_same_bits(got, rne_bits(x), "narrow1 (asked for the native build on a device without the type)")
    finally:
        if old is None:
            os.environ.pop("M2V_NATIVE_BFLOAT16", None)
        else:
            os.environ["M2V_NATIVE_BFLOAT16"] = old
