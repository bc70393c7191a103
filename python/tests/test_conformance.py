"""The conformance facts at the end of MLX_METAL_KERNEL.md, and the metal_kernel API's behaviour."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import metal2vk as m2v
from conftest import assert_close, run_simd


def test_exp_elementwise_4x16(rng):
    a = rng.standard_normal((4, 16)).astype(np.float32)
    k = m2v.metal_kernel(name="myexp", input_names=["inp"], output_names=["out"],
                         source="""
        uint elem = thread_position_in_grid.x;
        T tmp = inp[elem];
        out[elem] = metal::exp(tmp);
    """)
    (out,) = k(inputs=[a], template=[("T", np.float32)], grid=(a.size, 1, 1), threadgroup=(256, 1, 1),
               output_shapes=[a.shape], output_dtypes=[a.dtype])
    assert out.shape == (4, 16) and out.dtype == np.float32
    assert_close(out, np.exp(a), 1e-5, 1e-6)


def test_exp_strided_elem_to_loc(rng):
    base = rng.standard_normal((8, 32)).astype(np.float32)
    a = base[::2, 1::2]  # 4x16 view: strides (64, 2) elements, offset 1
    assert not a.flags.c_contiguous
    k = m2v.metal_kernel(name="myexp_strided", input_names=["inp"], output_names=["out"],
                         ensure_row_contiguous=False, source="""
        uint elem = thread_position_in_grid.x;
        uint loc = elem_to_loc(elem, inp_shape, inp_strides, inp_ndim);
        T tmp = inp[loc];
        out[elem] = metal::exp(tmp);
    """)
    src = k.source(inputs=[a], output_dtypes=[np.float32], template=[("T", np.float32)])
    assert "const constant int* inp_shape [[buffer(1)]]" in src
    assert "const constant int64_t* inp_strides [[buffer(2)]]" in src
    assert "const constant int& inp_ndim [[buffer(3)]]" in src
    (out,) = k(inputs=[a], template=[("T", np.float32)], grid=(a.size, 1, 1), threadgroup=(256, 1, 1),
               output_shapes=[a.shape], output_dtypes=[np.float32])
    assert_close(out, np.exp(a), 1e-5, 1e-6)


def test_strides_seen_by_kernel_without_copy():
    base = np.arange(6 * 10, dtype=np.int32).reshape(6, 10)
    a = base[1:, ::-3]  # negative stride, non-zero offset
    k = m2v.metal_kernel(name="strides_probe", input_names=["a"], output_names=["s", "v"],
                         ensure_row_contiguous=False, source="""
        uint i = thread_position_in_grid.x;
        if (i < uint(a_ndim)) s[i] = int(a_strides[i]);
        v[i] = a[elem_to_loc(int64_t(i), a_shape, a_strides, a_ndim)];  // signed: offsets below the first element
    """)
    s, v = k(inputs=[a], grid=(a.size, 1, 1), threadgroup=(32, 1, 1), output_shapes=[(a.size,), a.shape],
             output_dtypes=["int64", "int32"], init_value=0)
    assert list(s[:2]) == [10, -3]
    np.testing.assert_array_equal(v, a)


def test_row_contiguous_copy_by_default():
    a = np.arange(24, dtype=np.float32).reshape(4, 6).T  # not row-contiguous
    k = m2v.metal_kernel(name="copy_rc", input_names=["a"], output_names=["o", "st"], source="""
        uint i = thread_position_in_grid.x;
        o[i] = a[i];
        if (i < 2) st[i] = a_strides[i];
    """)
    o, st = k(inputs=[a], grid=(24, 1, 1), threadgroup=(8, 1, 1), output_shapes=[(6, 4), (2,)],
              output_dtypes=[np.float32, np.int64])
    np.testing.assert_array_equal(o, a)
    assert list(st) == [4, 1]


def test_template_constants_scalar_two_outputs(rng):
    a = rng.standard_normal((3, 4)).astype(np.float32)
    b = np.array([3, 5, 7], dtype=np.int32)
    c = m2v.to_bfloat16(np.array([[1.5, 2.25], [-3.0, 0.5]], dtype=np.float32))
    d = 0.75
    source = """
        uint elem = thread_position_in_grid.x;
        T tmp = a[0];
        if (e) {
          out1[elem] = a[1] + b[2] + float(c[3]) + d + f;
        } else {
          out1[elem] = 1;
        }
        out2[elem] = a[1] + b[2] + float(c[1]) - d + float(tmp);
    """
    k = m2v.metal_kernel(name="arg_test", input_names=["a", "b", "c", "d"], output_names=["out1", "out2"],
                         source=source)
    tmpl = [("e", True), ("f", 3), ("T", np.float16)]
    src = k.source(inputs=[a, b, c, d], output_dtypes=[np.float32, np.int32], template=tmpl)
    assert "template <bool e, int f, typename T>" in src
    assert "  const device float* a [[buffer(0)]],\n" in src
    assert "  const constant int32_t* b [[buffer(1)]],\n" in src
    assert "  const constant bfloat16_t* c [[buffer(2)]],\n" in src
    assert "  const constant float& d [[buffer(3)]],\n" in src
    assert "  device float* out1 [[buffer(4)]],\n" in src
    assert "  device int32_t* out2 [[buffer(5)]],\n" in src
    assert "<1, 3, float16_t>;" in src
    out1, out2 = k(inputs=[a, b, c, d], template=tmpl, grid=(6, 1, 1), threadgroup=(2, 1, 1),
                   output_shapes=[(2, 3), (3, 2)], output_dtypes=[np.float32, np.int32])
    cf = m2v.from_bfloat16(c).reshape(-1)
    exp1 = a.reshape(-1)[1] + 7 + cf[3] + d + 3
    exp2 = a.reshape(-1)[1] + 7 + cf[1] - d + np.float32(np.float16(a.reshape(-1)[0]))
    assert_close(out1, np.full((2, 3), exp1), 1e-6, 1e-6)
    np.testing.assert_array_equal(out2, np.full((3, 2), np.int32(np.float32(exp2))))


def test_threads_per_threadgroup_observed():
    k = m2v.metal_kernel(name="tpt", input_names=[], output_names=["o", "d"], source="""
        uint i = thread_position_in_grid.x;
        o[i] = threads_per_threadgroup.x;
        d[i] = dispatch_threads_per_threadgroup.x;
    """)
    o, d = k(inputs=[], grid=(4, 1, 1), threadgroup=(2, 1, 1), output_shapes=[(4,), (4,)],
             output_dtypes=[np.uint32, np.uint32])
    assert list(o) == [2, 2, 2, 2]
    assert list(d) == [2, 2, 2, 2]
    # a partial edge threadgroup: threads_per_threadgroup is its real size, dispatch_* the requested one
    o, d = k(inputs=[], grid=(5, 1, 1), threadgroup=(2, 1, 1), output_shapes=[(5,), (5,)],
             output_dtypes=[np.uint32, np.uint32])
    assert list(o) == [2, 2, 2, 2, 1]
    assert list(d) == [2, 2, 2, 2, 2]


def test_threads_per_simdgroup_is_32():
    k = m2v.metal_kernel(name="tps", input_names=[], output_names=["o"], source="""
        o[thread_position_in_grid.x] = threads_per_simdgroup;
    """)
    (o,) = run_simd(k, inputs=[], grid=(64, 1, 1), threadgroup=(64, 1, 1), output_shapes=[(64,)],
                    output_dtypes=[np.uint32])
    assert (o == 32).all()


def test_atomic_scatter_add_init_zero(rng):
    n, bins = 4096, 37
    idx = rng.integers(0, bins, n).astype(np.int32)
    val = rng.standard_normal(n).astype(np.float32)
    k = m2v.metal_kernel(name="scatter_add", input_names=["idx", "val"], output_names=["out"], atomic_outputs=True,
                         source="""
        uint i = thread_position_in_grid.x;
        atomic_fetch_add_explicit(&out[idx[i]], val[i], memory_order_relaxed);
    """)
    assert "device atomic<float>* out [[buffer(2)]]" in k.source(inputs=[idx, val], output_dtypes=[np.float32])
    (out,) = k(inputs=[idx, val], grid=(n, 1, 1), threadgroup=(256, 1, 1), output_shapes=[(bins,)],
               output_dtypes=[np.float32], init_value=0)
    ref = np.zeros(bins, np.float64)
    np.add.at(ref, idx, val)
    assert_close(out, ref, 1e-4, 1e-4)


def test_verbose_prints_mlx_text(capsys):
    k = m2v.metal_kernel(name="verbose_k", input_names=["x"], output_names=["y"],
                         source="y[thread_position_in_grid.x] = x[thread_position_in_grid.x] * 2;")
    x = np.arange(8, dtype=np.float32)
    (y,) = k(inputs=[x], grid=(8, 1, 1), threadgroup=(8, 1, 1), output_shapes=[(8,)], output_dtypes=[np.float32],
             verbose=True)
    out = capsys.readouterr().out
    assert out.startswith("Generated source code for `verbose_k`:\n```\n[[kernel]] void custom_kernel_verbose_k_float_float(\n")
    assert "mlx_prelude" not in out
    np.testing.assert_array_equal(y, x * 2)


def test_python_scalars_and_template_kinds():
    k = m2v.metal_kernel(name="scalars", input_names=["b", "i", "l", "f", "z"], output_names=["o"], source="""
        o[0] = b ? 1.0f : 0.0f; o[1] = float(i); o[2] = float(l); o[3] = f; o[4] = float(z) + float(N) + (B ? 1 : 0);
    """)
    z = np.array(2.0, dtype=np.float16)  # 0-d array: a reference
    tmpl = [("N", 3), ("B", True)]
    src = k.source(inputs=[True, 7, 2**40, 1.5, z], output_dtypes=[np.float32], template=tmpl)
    assert "const constant bool& b [[buffer(0)]]" in src
    assert "const constant int32_t& i [[buffer(1)]]" in src
    assert "const constant int64_t& l [[buffer(2)]]" in src
    assert "const constant float& f [[buffer(3)]]" in src
    assert "const constant float16_t& z [[buffer(4)]]" in src
    assert "template <int N, bool B>" in src and "<3, 1>;" in src  # True is a bool, not an int
    assert "custom_kernel_scalars__3_1_bools_int32_ts_int64_ts_floats_float16_ts_float" in src
    (o,) = k(inputs=[True, 7, 2**40, 1.5, z], template=tmpl, grid=(1, 1, 1), threadgroup=(1, 1, 1),
             output_shapes=[(5,)], output_dtypes=["float32"])
    assert_close(o, [1, 7, 2.0**40, 1.5, 6], 1e-6, 0)


def test_threadgroup_clamped_to_grid_and_checked():
    k = m2v.metal_kernel(name="clamp", input_names=[], output_names=["o"], source="""
        o[thread_position_in_grid.x] = threads_per_threadgroup.x;
    """)
    (o,) = k(inputs=[], grid=(3, 1, 1), threadgroup=(256, 1, 1), output_shapes=[(3,)], output_dtypes=[np.uint32])
    assert list(o) == [3, 3, 3]
    with pytest.raises(ValueError, match="Thread group size"):
        k(inputs=[], grid=(4096, 1, 1), threadgroup=(2048, 1, 1), output_shapes=[(4096,)], output_dtypes=[np.uint32])


def test_argument_errors():
    k = m2v.metal_kernel(name="errs", input_names=["x"], output_names=["o"], source="o[0] = x[0];")
    x = np.zeros(4, np.float32)
    with pytest.raises(ValueError, match="Expected `inputs` to have size 1"):
        k(inputs=[x, x], grid=(1, 1, 1), threadgroup=(1, 1, 1), output_shapes=[(1,)], output_dtypes=[np.float32])
    with pytest.raises(ValueError, match="output_shapes"):
        k(inputs=[x], grid=(1, 1, 1), threadgroup=(1, 1, 1), output_shapes=[], output_dtypes=[np.float32])
    with pytest.raises(TypeError, match="Invalid template argument"):
        k(inputs=[x], grid=(1, 1, 1), threadgroup=(1, 1, 1), output_shapes=[(1,)], output_dtypes=[np.float32],
          template=[("T", 1.5)])
    with pytest.raises(ValueError, match="at least one output"):
        m2v.metal_kernel(name="none", input_names=[], output_names=[], source="")


def test_compile_error_carries_diagnostics():
    k = m2v.metal_kernel(name="broken", input_names=["x"], output_names=["o"],
                         source="o[0] = x[0] + undeclared_thing;")
    with pytest.raises(m2v.CompileError) as info:
        k(inputs=[np.zeros(8, np.float32)], grid=(1, 1, 1), threadgroup=(1, 1, 1), output_shapes=[(1,)],
          output_dtypes=[np.float32])
    assert "undeclared_thing" in info.value.diagnostics
    assert "undeclared_thing" in str(info.value)


def test_init_value_fills_every_dtype():
    k = m2v.metal_kernel(name="noop", input_names=[], output_names=["a", "b", "c", "d", "e"],
                         source="if (thread_position_in_grid.x == 0) { a[0] = a[0]; }")
    a, b, c, d, e = k(inputs=[], grid=(1, 1, 1), threadgroup=(1, 1, 1), output_shapes=[(5,), (3,), (7,), (2,), (3,)],
                      output_dtypes=[np.float16, "bfloat16", np.int8, np.float64, np.int64], init_value=-2.5)
    assert (a == np.float16(-2.5)).all()
    assert m2v.is_bfloat16(b) and (m2v.from_bfloat16(b) == -2.5).all()
    assert (c == -2).all()
    assert (d == -2.5).all()
    assert (e == -2).all()


def test_bfloat16_round_trip(rng):
    x = rng.standard_normal(300).astype(np.float32)
    xb = m2v.to_bfloat16(x)
    assert m2v.is_bfloat16(xb) and xb.dtype == np.uint16
    k = m2v.metal_kernel(name="bf16_scale", input_names=["x"], output_names=["y"], source="""
        uint i = thread_position_in_grid.x;
        y[i] = x[i] * bfloat16_t(2.0f);
    """)
    assert "const device bfloat16_t* x" in k.source(inputs=[xb], output_dtypes=["bfloat16"])
    (y,) = k(inputs=[xb], grid=(300, 1, 1), threadgroup=(64, 1, 1), output_shapes=[(300,)],
             output_dtypes=["bfloat16"])
    assert m2v.is_bfloat16(y)
    np.testing.assert_array_equal(m2v.from_bfloat16(y), m2v.from_bfloat16(xb) * 2)


def test_cached_call_does_not_recompile():
    k = m2v.metal_kernel(name="cache_probe", input_names=["x"], output_names=["y"],
                         source="y[thread_position_in_grid.x] = x[thread_position_in_grid.x] + 1;")
    x = np.zeros(16, np.int32)
    k(inputs=[x], grid=(16, 1, 1), threadgroup=(16, 1, 1), output_shapes=[(16,)], output_dtypes=[np.int32])
    before = m2v.cache_stats()
    for _ in range(3):
        (y,) = k(inputs=[x], grid=(16, 1, 1), threadgroup=(16, 1, 1), output_shapes=[(16,)], output_dtypes=[np.int32])
    after = m2v.cache_stats()
    assert after["compiles"] == before["compiles"]
    assert (y == 1).all()


_CHILD = textwrap.dedent("""
    import numpy as np, metal2vk as m2v, sys
    k = m2v.metal_kernel(name="disk_cache_probe_%s", input_names=["x"], output_names=["y"],
                         source="y[thread_position_in_grid.x] = x[thread_position_in_grid.x] * 3;")
    x = np.arange(32, dtype=np.int32)
    (y,) = k(inputs=[x], grid=(32, 1, 1), threadgroup=(32, 1, 1), output_shapes=[(32,)], output_dtypes=[np.int32])
    assert (y == x * 3).all()
    s = m2v.cache_stats()
    print(s["compiles"], s["disk_hits"])
""")


def _run_children(tag, count, cache_dir):
    env = dict(os.environ, M2V_CACHE_DIR=str(cache_dir))
    procs = [subprocess.Popen([sys.executable, "-c", _CHILD % tag], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(count)]
    results = []
    for p in procs:
        out, err = p.communicate(timeout=600)
        assert p.returncode == 0, err
        results.append(tuple(int(v) for v in out.split()))
    return results


def test_disk_cache_shared_between_processes(tmp_path):
    # Two processes compile the same kernel at once (both may compile; the rename keeps the entry whole) ...
    first = _run_children("a", 2, tmp_path)
    assert all(c + h == 1 for c, h in first)
    entries = list((tmp_path / "mlx").glob("*.m2vmod"))
    assert len(entries) == 1 and not list((tmp_path / "mlx").glob("*.tmp.*"))
    # ... and a later process loads it from disk without compiling.
    (later,) = _run_children("a", 1, tmp_path)
    assert later == (0, 1)


def test_corrupt_disk_entry_is_recompiled(tmp_path):
    _run_children("b", 1, tmp_path)
    (entry,) = (tmp_path / "mlx").glob("*.m2vmod")
    entry.write_bytes(entry.read_bytes()[:100])
    (again,) = _run_children("b", 1, tmp_path)
    assert again == (1, 0)


def test_devices_listed():
    devs = m2v.devices()
    assert devs and all(isinstance(d, str) for d in devs)
    info = m2v.device_info()
    assert info["name"]
