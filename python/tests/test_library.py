"""The library face: compile a multi-file .metal project, then launch its kernels the way Metal host code does."""
import json
import os
import subprocess

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
    got = s.read(by, np.int32, (4096,))
    assert np.array_equal(got, x.reshape(-1, 128)[:, ::-1].reshape(-1))
    st = s.stats()
    assert st["dispatches"] == 8 and st["host_waits"] == 1 and st["submissions"] >= 2


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
