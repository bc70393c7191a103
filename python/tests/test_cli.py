"""`m2v mlx SPEC.json`: the CLI form of one metal_kernel call (M2V_BIN points at the m2v binary)."""
import json
import os
import subprocess

import numpy as np
import pytest

M2V = os.environ.get("M2V_BIN")
pytestmark = pytest.mark.skipif(not M2V or not os.path.exists(M2V), reason="M2V_BIN is not set (ctest sets it)")

SPEC = {
    "name": "axpby",
    "input_names": ["x", "y", "a", "b"],
    "output_names": ["out", "n"],
    "source": """
        uint i = thread_position_in_grid.x;
        out[i] = T(a) * x[i] + T(b) * float(y[i]);
        if (i == 0) n[0] = x_shape[0] * x_shape[1];
    """,
    "template": [["T", "float32"]],
    "grid": [12, 1, 1],
    "threadgroup": [5, 1, 1],
    "output_shapes": [[3, 4], [1]],
    "output_dtypes": ["float32", "int32"],
    "init_value": 0,
}


def run(spec, tmp_path, *flags):
    p = tmp_path / "spec.json"
    p.write_text(json.dumps(spec))
    return subprocess.run([M2V, "mlx", str(p), "-o", str(tmp_path / "out"), *flags], capture_output=True, text=True,
                          timeout=600)


def test_inline_npy_and_scalars(tmp_path):
    y = np.arange(12, dtype=np.float16).reshape(3, 4)
    np.save(tmp_path / "y.npy", y)
    spec = dict(SPEC, inputs=[{"data": [[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]], "dtype": "float32"},
                              {"npy": "y.npy"}, 2.0, -1])
    r = run(spec, tmp_path)
    assert r.returncode == 0, r.stderr
    out = np.load(tmp_path / "out" / "out.npy")
    n = np.load(tmp_path / "out" / "n.npy")
    x = np.arange(1, 13, dtype=np.float32).reshape(3, 4)
    np.testing.assert_allclose(out, 2 * x - y.astype(np.float32))
    assert n.tolist() == [12] and n.dtype == np.int32


def test_random_inputs_and_print_source(tmp_path):
    spec = dict(SPEC, inputs=[{"random": "normal", "shape": [3, 4], "seed": 3},
                              {"random": "int", "shape": [3, 4], "dtype": "int32", "low": 0, "high": 5}, 1.0, 0.0])
    r = run(spec, tmp_path, "--print-source")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("template <typename T>\n[[kernel]] void custom_kernel_axpby__float_float_int32_t_floats_floats_float_int32_t(\n")
    assert "  const constant int* x_shape [[buffer(1)]],\n" in r.stdout
    assert "mlx_prelude" not in r.stdout
    r = run(spec, tmp_path)
    assert r.returncode == 0, r.stderr
    out = np.load(tmp_path / "out" / "out.npy")
    assert out.shape == (3, 4) and np.isfinite(out).all() and out.std() > 0


def test_compile_error_exit_code(tmp_path):
    spec = dict(SPEC, source="out[0] = nope;", inputs=[{"data": [[1.0]]}, {"data": [[1.0]]}, 1.0, 1.0])
    r = run(spec, tmp_path)
    assert r.returncode == 1
    assert "nope" in r.stderr


def test_bad_spec_is_an_input_error(tmp_path):
    r = run({"name": "x"}, tmp_path)
    assert r.returncode == 1
    assert "output_names" in r.stderr
