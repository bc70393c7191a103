"""The library face: compile a multi-file .metal project, then launch its kernels the way Metal host code does."""
import concurrent.futures
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import metal2vk as m2v

HEADER = """
#pragma once
#include <metal_stdlib>
using namespace metal;
struct Params { float scale; int n; };
template <typename T> T twice(T x) { return x + x; }
"""

SOURCE = """
#include "include/params.h"
constant bool use_scale [[function_constant(3)]];

template <typename T>
[[kernel]] void scale_add(device const T* x [[buffer(0)]], device T* y [[buffer(1)]],
                          constant Params& p [[buffer(2)]], uint i [[thread_position_in_grid]]) {
  if (int(i) < p.n) y[i] = T(use_scale ? float(x[i]) * p.scale : float(twice(x[i]))) + y[i];
}
template [[host_name("scale_add_float32")]] [[kernel]] void scale_add<float>(
    device const float*, device float*, constant Params&, uint);
template [[host_name("scale_add_float16")]] [[kernel]] void scale_add<half>(
    device const half*, device half*, constant Params&, uint);

// Reverses each threadgroup's slice through threadgroup memory sized by the host.
[[kernel]] void tg_reverse(device const int* x [[buffer(0)]], device int* y [[buffer(1)]],
                           threadgroup int* tmp [[threadgroup(0)]],
                           uint i [[thread_position_in_grid]], uint l [[thread_position_in_threadgroup]],
                           uint n [[threads_per_threadgroup]]) {
  tmp[l] = x[i];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  y[i] = tmp[n - 1 - l];
}
"""


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    root = tmp_path_factory.mktemp("proj")
    (root / "include").mkdir()
    (root / "include" / "params.h").write_text(HEADER)
    (root / "kernels.metal").write_text(SOURCE)
    return root


@pytest.fixture(scope="module")
def lib(project):
    return m2v.compile_library(str(project / "kernels.metal"))


def params(scale, n):
    return np.array([(scale, n)], dtype=[("scale", "<f4"), ("n", "<i4")])


def test_compiles_every_entry_with_reflection(lib):
    assert sorted(lib.names()) == ["scale_add_float16", "scale_add_float32", "tg_reverse"]
    r = lib["scale_add_float32"].reflection
    assert r["entry"] == "scale_add_float32"
    assert [fc["name"] for fc in r["function_constants"]] == ["use_scale"]
    assert lib["tg_reverse"].spirv[:4] == b"\x03\x02\x23\x07"


@pytest.mark.parametrize("use_scale", [True, False])
@pytest.mark.parametrize("dtype,name", [(np.float32, "scale_add_float32"), (np.float16, "scale_add_float16")])
def test_buffers_bytes_constants_and_partial_grid(lib, rng, use_scale, dtype, name):
    n = 1000  # not a multiple of the threadgroup: the edge group is partial, as with dispatchThreads
    x = rng.uniform(-2, 2, n).astype(dtype)
    y0 = rng.uniform(-2, 2, n).astype(dtype)
    s = m2v.Stream(timestamps=True)
    bx, by = s.buffer(x), s.buffer(y0)
    s.set_kernel(lib[name])
    s.set_buffer(bx, 0)
    s.set_buffer(by, 1)
    s.set_bytes(params(0.5, n - 3), 2)  # the last three elements stay as they were
    s.set_function_constant(3, use_scale)
    s.dispatch_threads((n, 1, 1), (64, 1, 1))
    got = s.read(by, dtype, (n,)).astype(np.float64)
    xs, ys = x.astype(np.float64), y0.astype(np.float64)
    want = np.where(np.arange(n) < n - 3, (xs * 0.5 if use_scale else 2 * xs) + ys, ys)
    np.testing.assert_allclose(got, want, rtol=2e-3 if dtype == np.float16 else 1e-6, atol=2e-3)
    (t,) = s.take_timings()
    assert t["kernel"] == name and t["gpu_ns"] > 0


def test_offsets_threadgroup_memory_and_many_dispatches(lib):
    s = m2v.Stream(batch_size=4)
    x = np.arange(4096, dtype=np.int32)
    bx, by = s.buffer(x), m2v.Buffer(4096 * 4)
    s.set_kernel(lib["tg_reverse"])
    s.set_threadgroup_memory_length(128 * 4, 0)
    for k in range(8):  # eight slices of 512 elements, each through a buffer offset
        s.set_buffer(bx, 0, offset=k * 512 * 4)
        s.set_buffer(by, 1, offset=k * 512 * 4)
        s.dispatch_threadgroups((4, 1, 1), (128, 1, 1))
    recorded = s.stats()  # recording never waits; batches of 4 are submitted as they fill
    assert recorded["dispatches"] == 8 and recorded["host_waits"] == 0 and recorded["submissions"] >= 1
    got = s.read(by, np.int32, (4096,))
    assert np.array_equal(got, x.reshape(-1, 128)[:, ::-1].reshape(-1))
    # read() waits at most once, and not at all when the GPU has already finished (the runtime counts real waits)
    st = s.stats()
    assert st["host_waits"] <= 1 and st["submissions"] >= 2


def test_threads_record_on_their_own_streams(lib):
    """Dispatches (and the pipeline builds behind them) run without the GIL: threads record at once, each on its own
    stream (a stream shared between threads takes their calls one at a time)."""
    n = 512
    x = np.arange(n, dtype=np.int32)

    def reverse_on(stream, scale):
        bx, by = stream.buffer(x * scale), m2v.Buffer(n * 4)
        for _ in range(4):
            stream.set_kernel(lib["tg_reverse"])
            stream.set_threadgroup_memory_length(64 * 4, 0)
            stream.set_buffer(bx, 0)
            stream.set_buffer(by, 1)
            stream.dispatch_threadgroups((n // 64, 1, 1), (64, 1, 1))
        return np.array_equal(stream.read(by, np.int32, (n,)), (x * scale).reshape(-1, 64)[:, ::-1].reshape(-1))

    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        own = list(pool.map(lambda k: reverse_on(m2v.Stream(), k + 1), range(8)))
    assert all(own)


def test_pipeline_stats_count_builds_and_their_time(lib):
    s = m2v.Stream()
    x = np.arange(256, dtype=np.int32)
    bx, by = s.buffer(x), m2v.Buffer(256 * 4)

    def reverse(group):
        s.set_kernel(lib["tg_reverse"])
        s.set_threadgroup_memory_length(group * 4, 0)
        s.set_buffer(bx, 0)
        s.set_buffer(by, 1)
        s.dispatch_threadgroups((256 // group, 1, 1), (group, 1, 1))
        s.synchronize()

    reverse(32)  # whatever an earlier test built
    first = m2v.pipeline_stats()
    reverse(16)  # a threadgroup size no test used: a new pipeline
    second = m2v.pipeline_stats()
    reverse(16)  # the same: served from memory
    third = m2v.pipeline_stats()
    assert second["created"] == first["created"] + 1 and second["build_s"] > first["build_s"]
    assert third["created"] == second["created"] and third["build_s"] == second["build_s"]
    assert third["memory_hits"] > second["memory_hits"]


def test_only_requested_entries(project):
    lib = m2v.compile_library(str(project / "kernels.metal"), entries=["tg_reverse"])
    assert lib.names() == ["tg_reverse"]
    with pytest.raises(KeyError, match="scale_add_float32"):
        lib["scale_add_float32"]


def test_compile_error_carries_diagnostics(tmp_path):
    bad = tmp_path / "bad.metal"
    bad.write_text("[[kernel]] void k(device float* y [[buffer(0)]]) { y[0] = undeclared; }\n")
    with pytest.raises(m2v.CompileError) as e:
        m2v.compile_library(str(bad))
    assert e.value.status == 1
    assert "bad.metal:1:" in e.value.diagnostics and "undeclared" in e.value.diagnostics
    partial = m2v.compile_library(str(bad), partial=True)
    assert len(partial) == 0 and partial.status == 1


def test_missing_binding_is_a_usage_error(lib):
    s = m2v.Stream()
    s.set_kernel(lib["tg_reverse"])
    s.set_threadgroup_memory_length(64 * 4, 0)
    s.set_buffer(m2v.Buffer(256), 0)
    with pytest.raises(m2v.UsageError):
        s.dispatch_threadgroups((1, 1, 1), (64, 1, 1))


def test_read_past_the_end_is_refused(lib):
    s = m2v.Stream()
    with pytest.raises(ValueError, match="overruns"):
        s.read(m2v.Buffer(16), np.float32, (5,))


def test_load_kernel_from_m2v_compile_output(project, tmp_path):
    m2v_bin = os.environ.get("M2V_BIN")
    if not m2v_bin:
        pytest.skip("M2V_BIN (the m2v executable) is not set; ctest sets it")
    subprocess.run([m2v_bin, "compile", str(project / "kernels.metal"), "--entry", "tg_reverse", "-o", str(tmp_path)],
                   check=True)
    k = m2v.load_kernel(str(tmp_path / "tg_reverse.spv"), (tmp_path / "tg_reverse.json").read_text())
    assert k.name == "tg_reverse" and json.loads((tmp_path / "tg_reverse.json").read_text())["entry"] == k.name
    s = m2v.Stream()
    x = np.arange(64, dtype=np.int32)
    by = m2v.Buffer(256)
    s.set_kernel(k)
    s.set_buffer(s.buffer(x), 0)
    s.set_buffer(by, 1)
    s.set_threadgroup_memory_length(256, 0)
    s.dispatch_threadgroups(1, 64)
    assert np.array_equal(s.read(by, np.int32, 64), x[::-1])


SHAPES = """
#include <metal_stdlib>
using namespace metal;
// Every thread writes what Metal says it is, at its own grid position.
kernel void whoami(device uint4* o [[buffer(0)]], constant uint3& grid [[buffer(1)]],
                   uint3 l [[thread_position_in_threadgroup]], uint3 g [[thread_position_in_grid]],
                   uint3 n [[threads_per_threadgroup]], uint li [[thread_index_in_threadgroup]],
                   uint3 tg [[threadgroup_position_in_grid]]) {
  o[(g.z * grid.y + g.y) * grid.x + g.x] = uint4(l.x | (l.y << 10) | (l.z << 20), li, n.x | (n.y << 10) | (n.z << 20),
                                                 tg.x | (tg.y << 10) | (tg.z << 20));
}
"""

RELAYOUT_CHILD = """
import sys, numpy as np, metal2vk as m2v
lib = m2v.compile_library(sys.argv[1])
grid, tg = (3, 5, 200), (1, 2, 128)  # z = 128 exceeds the per-axis limit set below; edge groups are partial
s = m2v.Stream()
o = m2v.Buffer(4 * 16 * 3 * 5 * 200)
s.set_kernel(lib["whoami"]); s.set_buffer(o, 0); s.set_bytes(np.array(grid, np.uint32), 1)
s.dispatch_threads(grid, tg)
np.save(sys.argv[2], s.read(o, np.uint32, (200, 5, 3, 4)))
"""


@pytest.mark.parametrize("setting", [{}, {"M2V_MAX_WORKGROUP_SIZE": "1024,1024,64"},
                                     {"M2V_LINEAR_WORKGROUPS": "0", "M2V_MAX_WORKGROUP_SIZE": "1024,1024,128"}],
                         ids=["linear", "past-axis-limit", "metal-shape"])
def test_threadgroup_shapes_run_with_metal_positions(tmp_path, setting):
    """A 1x2x128 threadgroup (Metal allows it) runs as one linear workgroup by default, and must where the device's
    z stops at 64 (NVIDIA; M2V_MAX_WORKGROUP_SIZE gives any device that limit); with M2V_LINEAR_WORKGROUPS=0 it
    keeps its shape where the device allows it. Every way, the kernel sees Metal's positions."""
    src = tmp_path / "shapes.metal"
    src.write_text(SHAPES)
    out = tmp_path / "o.npy"
    env = {k: v for k, v in os.environ.items() if k not in ("M2V_MAX_WORKGROUP_SIZE", "M2V_LINEAR_WORKGROUPS")}
    env.update(setting)
    subprocess.run([sys.executable, "-c", RELAYOUT_CHILD, str(src), str(out)], check=True, env=env)
    got = np.load(out)
    z, y, x = np.meshgrid(np.arange(200), np.arange(5), np.arange(3), indexing="ij")
    tg = np.array([1, 2, 128])
    lx, ly, lz = x % tg[0], y % tg[1], z % tg[2]
    nx, ny, nz = [np.where(v // t == (e - 1) // t, (e - 1) % t + 1, t) for v, t, e in zip((x, y, z), tg, (3, 5, 200))]
    pack = lambda a, b, c: a | (b << 10) | (c << 20)
    np.testing.assert_array_equal(got[..., 0], pack(lx, ly, lz))
    np.testing.assert_array_equal(got[..., 1], lx + nx * (ly + ny * lz))
    np.testing.assert_array_equal(got[..., 2], pack(nx, ny, nz))
    np.testing.assert_array_equal(got[..., 3], pack(x // tg[0], y // tg[1], z // tg[2]))


EXACT = """
#include <metal_stdlib>
using namespace metal;
kernel void fmod_f(device const float* x [[buffer(0)]], device const float* y [[buffer(1)]],
                   device float* o [[buffer(2)]], uint i [[thread_position_in_grid]]) { o[i] = fmod(x[i], y[i]); }
kernel void fmod_h(device const half* x [[buffer(0)]], device const half* y [[buffer(1)]],
                   device half* o [[buffer(2)]], uint i [[thread_position_in_grid]]) { o[i] = fmod(x[i], y[i]); }
kernel void srem(device const int* x [[buffer(0)]], device const int* y [[buffer(1)]],
                 device int* o [[buffer(2)]], uint i [[thread_position_in_grid]]) { o[i] = x[i] % y[i]; }
// Round to an integer by adding and subtracting 1.5 * 2^23: only exact if the driver keeps both operations.
kernel void round_trick(device const float* x [[buffer(0)]], device const float* y [[buffer(1)]],
                        device float* o [[buffer(2)]], uint i [[thread_position_in_grid]]) {
  float j = fma(y[i], x[i], 12582912.0f);
  o[i] = j - 12582912.0f;
}
"""


@pytest.fixture(scope="module")
def exact_lib(tmp_path_factory):
    p = tmp_path_factory.mktemp("exact") / "exact.metal"
    p.write_text(EXACT)
    return m2v.compile_library(str(p))


def _binary(lib, name, x, y):
    s = m2v.Stream()
    o = m2v.Buffer(x.nbytes)
    s.set_kernel(lib[name])
    s.set_buffer(s.buffer(x), 0)
    s.set_buffer(s.buffer(y), 1)
    s.set_buffer(o, 2)
    s.dispatch_threads((x.size, 1, 1), (64, 1, 1))
    return s.read(o, x.dtype, x.shape)


@pytest.mark.parametrize("dtype,name", [(np.float32, "fmod_f"), (np.float16, "fmod_h")])
def test_fmod_is_exact(exact_lib, rng, dtype, name):
    """Metal's fmod is exact; x - y * trunc(x / y) is not once |x / y| is large."""
    n = 4096
    with np.errstate(all="ignore"):
        scale = 10.0 ** rng.integers(-4, 5, n) if dtype == np.float16 else 10.0 ** rng.integers(-35, 35, n)
        x = (rng.uniform(-1, 1, n) * scale).astype(dtype)
        y = (rng.uniform(-1, 1, n) * scale[::-1]).astype(dtype)
        x[:6] = [13696, 1e4, 0, np.inf, 5, -7.5]
        y[:6] = [3.1, 0.7, 2, 2, np.inf, 0]
        want = np.fmod(x, y)
    got = _binary(exact_lib, name, x, y)
    bits = np.uint16 if dtype == np.float16 else np.uint32
    same = (got.view(bits) == want.view(bits)) | (np.isnan(got) & np.isnan(want))
    assert same.all(), f"{np.sum(~same)} differ, e.g. fmod({x[~same][0]}, {y[~same][0]}) = {got[~same][0]}"


def test_signed_remainder(exact_lib, rng):
    x = rng.integers(-1000, 1000, 1024).astype(np.int32)
    y = rng.integers(1, 50, 1024).astype(np.int32) * rng.choice([-1, 1], 1024).astype(np.int32)
    want = (np.abs(x) % np.abs(y)) * np.sign(x)  # C's %: truncated division, the sign of the dividend
    np.testing.assert_array_equal(_binary(exact_lib, "srem", x, y), want)


def test_float_operations_are_not_reassociated(exact_lib, rng):
    x = rng.uniform(-1000, 1000, 1024).astype(np.float32)
    y = np.ones(1024, np.float32)
    np.testing.assert_array_equal(_binary(exact_lib, "round_trick", x, y), np.rint(x))


UNUSED = """
#include <metal_stdlib>
using namespace metal;
// As MLX's gemv: a template flag compiles the bias path out, and the host binds only what the instance reads.
template <bool kBias>
[[kernel]] void scale(const device float* x [[buffer(0)]], const device float* bias [[buffer(2)]],
                      device float* y [[buffer(3)]], const constant float& beta [[buffer(8)]],
                      const constant int* pad [[buffer(20)]], uint i [[thread_position_in_grid]]) {
  y[i] = 2.0f * x[i] + (kBias ? beta * bias[i] + float(pad[0]) : 0.0f);
}
template [[host_name("scale_bias")]] [[kernel]] decltype(scale<true>) scale<true>;
template [[host_name("scale_plain")]] [[kernel]] decltype(scale<false>) scale<false>;
"""


@pytest.mark.parametrize("many", [False, True], ids=["push_constants", "argument_buffer"])
def test_buffers_the_kernel_never_reads_may_stay_unbound(tmp_path, many):
    """Metal lets the host leave a buffer argument unbound when the kernel does not use it; one it reads must be
    bound. With 15+ buffer arguments the addresses travel in an argument buffer: the same holds there."""
    src = UNUSED
    if many:  # buffers 9..19: unused by both instances, pushing the signature past the push-constant block
        extra = "".join(f"const device float* u{k} [[buffer({k})]], " for k in range(9, 20))
        src = src.replace("const constant int* pad", extra + "const constant int* pad")
    p = tmp_path / "unused.metal"
    p.write_text(src)
    lib = m2v.compile_library(str(p))
    plain, bias = lib["scale_plain"], lib["scale_bias"]
    assert plain.reflection["push_constants"]["argument_buffer"] == many
    used = {a["buffer"]: a["used"] for a in plain.reflection["push_constants"]["args"]}
    assert used == {k: k in (0, 3) for k in used}
    x = np.arange(64, dtype=np.float32)
    s = m2v.Stream()
    y = m2v.Buffer(256)
    s.set_kernel(plain)
    s.set_buffer(s.buffer(x), 0)
    s.set_buffer(y, 3)
    s.dispatch_threads(64, 64)
    np.testing.assert_array_equal(s.read(y, np.float32, 64), 2 * x)
    s.set_kernel(bias)  # reads buffer(2), (8) and (20): unbound, a usage error, never a fault
    with pytest.raises(m2v.UsageError, match=r"buffer\((2|8|20)\) is not bound"):
        s.dispatch_threads(64, 64)
