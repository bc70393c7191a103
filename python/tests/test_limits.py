"""Metal's 31 buffer arguments through every front door: `m2v run`, `m2v mlx` and the Python module.

A kernel with 17 or more buffers once read past a 16-entry address table (the process died in the kernel); these
tests cross each boundary of docs/ABI.md (13 addresses in the push block, 14 without abort checks, an argument buffer
beyond, 31 at most) and check the outputs against numpy. One past Metal's limit is a compile error (exit code 1) naming the allowed range.
(tests/limits covers the same limits in process through Stream, for every argument kind.)"""
import json
import os
import subprocess

import numpy as np
import pytest

import metal2vk as m2v

M2V = os.environ.get("M2V_BIN")
needs_cli = pytest.mark.skipif(not M2V or not os.path.exists(M2V), reason="M2V_BIN is not set (ctest sets it)")

N = 40  # threads; not a multiple of the threadgroup


def run_kernel_source(count):
    """`count` buffers: inputs alternate device arrays and `constant float&` scalars; the output is the last."""
    params, terms = [], []
    for k in range(count - 1):
        if k % 2:
            params.append(f"constant float& s{k} [[buffer({k})]]")
            terms.append(f"{k + 1}.0f * s{k}")
        else:
            params.append(f"const device float* x{k} [[buffer({k})]]")
            terms.append(f"{k + 1}.0f * x{k}[i]")
    params.append(f"device float* out [[buffer({count - 1})]]")
    body = " + ".join(terms) if terms else "0.0f"
    return ("#include <metal_stdlib>\nusing namespace metal;\n"
            f"kernel void many({', '.join(params)}, uint i [[thread_position_in_grid]]) {{ out[i] = {body} + 0.5f; }}\n")


def run_reference(count):
    i = np.arange(N, dtype=np.float64)
    acc = np.zeros(N)
    for k in range(count - 1):
        acc += (k + 1) * ((k + 0.25) if k % 2 else i)  # iota inputs; scalars are k + 0.25
    return (acc + 0.5).astype(np.float32)


@needs_cli
@pytest.mark.parametrize("count", [1, 2, 13, 14, 15, 16, 17, 18, 30, 31])
def test_m2v_run_buffer_counts(tmp_path, count):
    src = tmp_path / "many.metal"
    src.write_text(run_kernel_source(count))
    args = [M2V, "run", str(src), "--entry", "many", "--grid", str(N), "--threadgroup", "16",
            "--out", f"{count - 1}={tmp_path / 'out.bin'}"]
    for k in range(count - 1):
        args += ["--arg", f"{k}=f32:scalar:{k + 0.25}" if k % 2 else f"{k}=f32:{N}:iota"]
    args += ["--arg", f"{count - 1}=f32:{N}:zero"]
    r = subprocess.run(args, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    out = np.fromfile(tmp_path / "out.bin", dtype=np.float32)
    np.testing.assert_array_equal(out, run_reference(count))


@needs_cli
def test_m2v_run_32_buffers_is_an_input_error(tmp_path):
    src = tmp_path / "many.metal"
    src.write_text(run_kernel_source(32))
    r = subprocess.run([M2V, "run", str(src), "--entry", "many", "--grid", str(N), "--threadgroup", "16"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 1, r.stderr
    assert "Metal allows [[buffer(0)]] to [[buffer(30)]]" in r.stderr


def mlx_spec(inputs):
    """The issue's repro generalised: `inputs` arrays of 9 floats; the body reads the last one."""
    last = f"x{inputs - 1}"
    return {"name": "many", "input_names": [f"x{k}" for k in range(inputs)], "output_names": ["out"],
            "header": "", "ensure_row_contiguous": True, "atomic_outputs": False,
            "source": "uint i = thread_position_in_grid.x; if (i < 4) out[i] = "
                      + " + ".join(f"x{k}[i + {k % 5}]" for k in range(inputs)) + f" + {last}[3];",
            "inputs": [{"data": [float(10 * k + j) for j in range(9)], "dtype": "float32", "shape": [9]}
                       for k in range(inputs)],
            "template": [], "grid": [32, 1, 1], "threadgroup": [32, 1, 1], "output_shapes": [[4]],
            "output_dtypes": ["float32"], "init_value": None}


def mlx_reference(inputs):
    x = [np.arange(9, dtype=np.float64) + 10 * k for k in range(inputs)]
    i = np.arange(4)
    return (sum(x[k][i + k % 5] for k in range(inputs)) + x[inputs - 1][3]).astype(np.float32)


@needs_cli
@pytest.mark.parametrize("inputs", [1, 13, 14, 15, 16, 17, 29, 30])
def test_m2v_mlx_input_counts(tmp_path, inputs):
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(mlx_spec(inputs)))
    r = subprocess.run([M2V, "mlx", str(spec), "-o", str(tmp_path / "out")], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "out" / "out.npy"), mlx_reference(inputs))


@needs_cli
def test_m2v_mlx_31_inputs_is_an_input_error(tmp_path):
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(mlx_spec(31)))
    r = subprocess.run([M2V, "mlx", str(spec), "-o", str(tmp_path / "out")], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 1, r.stderr
    assert "[[buffer(30)]]" in r.stderr


@pytest.mark.parametrize("inputs", [16, 30])
def test_python_metal_kernel_input_counts(inputs):
    names = [f"x{k}" for k in range(inputs)]
    k = m2v.metal_kernel(name=f"many_{inputs}", input_names=names, output_names=["out"], source="""
        uint i = thread_position_in_grid.x;
        out[i] = """ + " + ".join(f"{k + 1}.0f * {n}[i]" for k, n in enumerate(names)) + ";")
    xs = [np.arange(N, dtype=np.float32) + 100 * k for k in range(inputs)]
    (o,) = k(inputs=xs, grid=(N, 1, 1), threadgroup=(16, 1, 1), output_shapes=[(N,)], output_dtypes=[np.float32])
    np.testing.assert_array_equal(o, sum((k + 1) * x.astype(np.float64) for k, x in enumerate(xs)).astype(np.float32))


def test_python_metal_kernel_31_inputs_is_a_compile_error():
    names = [f"x{k}" for k in range(31)]
    k = m2v.metal_kernel(name="many_31", input_names=names, output_names=["out"],
                         source="out[thread_position_in_grid.x] = x30[0];")
    xs = [np.zeros(N, dtype=np.float32) for _ in names]
    with pytest.raises(m2v.CompileError, match=r"\[\[buffer\(30\)\]\]"):
        k(inputs=xs, grid=(N, 1, 1), threadgroup=(16, 1, 1), output_shapes=[(N,)], output_dtypes=[np.float32])


def _mlx_cli(tmp_path, spec):
    p = tmp_path / "spec.json"
    p.write_text(json.dumps(spec))
    return subprocess.run([M2V, "mlx", str(p), "--print-source"], capture_output=True, text=True, timeout=300)


@needs_cli
@pytest.mark.parametrize("shape", [[2**33, 2**33, 4], [2**40, 2**30]])
def test_m2v_mlx_shape_overflow_is_an_input_error(tmp_path, shape):
    # The element count of these shapes wraps around 2^64: refused, never allocated short.
    spec = dict(mlx_spec(1), inputs=[{"random": "normal", "shape": shape}])
    r = _mlx_cli(tmp_path, spec)
    assert r.returncode == 1 and "shape too large" in r.stderr, r.stderr


@needs_cli
@pytest.mark.parametrize("dims", ["(99999999999999999999, 5)", "(4294967296, 4294967296, 16)", "(1000000000,)"])
def test_m2v_mlx_npy_with_impossible_shape_is_an_input_error(tmp_path, dims):
    # A .npy header whose shape is out of int64 range, overflows, or promises more data than the file holds.
    np.save(tmp_path / "x.npy", np.zeros(3, dtype=np.float32))
    raw = (tmp_path / "x.npy").read_bytes()
    header_end = raw.index(b"\n") + 1
    header = raw[10:header_end].replace(b"(3,)", dims.encode())
    header = header.rstrip(b"\n").ljust(((10 + len(header) + 63) // 64) * 64 - 10 - 1) + b"\n"
    (tmp_path / "x.npy").write_bytes(raw[:8] + len(header).to_bytes(2, "little") + header + raw[header_end:])
    spec = dict(mlx_spec(1), inputs=[{"npy": "x.npy"}])
    r = _mlx_cli(tmp_path, spec)
    assert r.returncode == 1, r.stderr
    assert "too large" in r.stderr or "truncated data" in r.stderr, r.stderr
