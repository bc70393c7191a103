"""Compiler issues found through the MLX front door (repros in mlx/tests/repros/); fixed in the compiler since,
kept as regression tests. Mark a case that is open again with a strict xfail: when fixed it XPASSes and fails,
so the marker gets removed and the case stays covered."""
import numpy as np
import pytest

import metal2vk as m2v

X = np.arange(128, dtype=np.float32) / 128


def _run(name, source, inputs, out_shape, out_dtype=np.float32):
    k = m2v.metal_kernel(name=name, input_names=[f"in{i}" for i in range(len(inputs))], output_names=["out"],
                         source=source)
    (o,) = k(inputs=inputs, grid=(32, 1, 1), threadgroup=(32, 1, 1), output_shapes=[out_shape],
             output_dtypes=[out_dtype], init_value=0)
    return o


    assert (o == X[1]).all()


    np.testing.assert_allclose(o, np.full(4, X[:32].sum()), rtol=1e-5)


def test_complex64_struct_copy():
    z = (np.arange(32) + 1j * np.arange(32)).astype(np.complex64)
    o = _run("complex_copy", """
        uint i = thread_position_in_grid.x;
        complex64_t v = in0[i];
        out[i] = v * complex64_t(0.0f, 1.0f);
    """, [z], (32,), np.complex64)
    np.testing.assert_allclose(o, z * 1j, rtol=1e-6)


def test_strided_loop_runtime_bound_fixed_inner_loop():
    k = m2v.metal_kernel(name="strided_runtime_bound", input_names=["x", "L"], output_names=["out"], source="""
        uint tid = thread_position_in_grid.x;
        float acc = 0.0f;
        for (int j = tid; j < L; j += 32) {
          float s = 0.0f;
          for (int d = 0; d < 32; ++d) s += x[(j * 32 + d) % 128];
          acc += s;
        }
        out[tid] = acc;
    """)
    (o,) = k(inputs=[X, 16], grid=(32, 1, 1), threadgroup=(32, 1, 1), output_shapes=[(32,)],
             output_dtypes=[np.float32])
    ref = np.array([sum(X[(j * 32 + d) % 128] for j in range(t, 16, 32) for d in range(32)) for t in range(32)])
    np.testing.assert_allclose(o, ref, rtol=1e-5)
