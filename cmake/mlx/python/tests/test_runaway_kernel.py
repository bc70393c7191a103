"""A custom kernel that never ends costs its own evaluation, not the device and the arrays on it.

    python3 -m unittest test_runaway_kernel      (PYTHONPATH: the mlx package; run_mlx_python_tests.py --tests DIR)

Each case runs in a child process with a 2 s GPU budget (M2V_TIMEOUT_MS): arrays are made and evaluated, then an
mx.fast.metal_kernel that spins on a flag nobody sets (or loops 2^32 - 1 times per thread) is evaluated. The
evaluation must raise within the budget and its grace, saying the command buffer timed out; after it the arrays made
before are still readable and equal to what numpy computes, new arrays and a correct custom kernel run on the GPU,
and the device was not replaced (metal2vk stops the kernel through its abort word, docs/ABI.md). Grids are large
because lavapipe ends every loop after 65,535 trips: millions of threads outlast the budget there.
"""
import os
import subprocess
import sys
import textwrap
import unittest

CHILD = textwrap.dedent(r'''
    import sys, time
    import mlx.core as mx
    import numpy as np

    CASE = sys.argv[1]
    N = 1 << 22
    before = mx.arange(100003, dtype=mx.float32) * 2 + 1
    weights = mx.random.normal((256, 256), key=mx.random.key(7))
    product = mx.exp(weights) * weights
    mx.eval(before, product)

    if CASE == "spin":
        kernel = mx.fast.metal_kernel(
            name="spin_on_flag", input_names=["gate"], output_names=["out"],
            source="""
                uint i = thread_position_in_grid.x;
                volatile const device uint* flag = gate;
                uint spins = 0;
                while (flag[0] == 0u) out[i] = ++spins;
            """)
        inputs = [mx.zeros((4096,), dtype=mx.uint32)]
    else:
        kernel = mx.fast.metal_kernel(
            name="long_loop", input_names=["rounds"], output_names=["out"],
            source="""
                uint i = thread_position_in_grid.x;
                uint x = i;
                for (uint k = 0; k < rounds[0]; ++k) x = x * 1664525u + 1013904223u;
                out[i] = x;
            """)
        inputs = [mx.array([0xFFFFFFFF], dtype=mx.uint32)]
    start = time.time()
    try:
        out = kernel(inputs=inputs, output_shapes=[(N,)], output_dtypes=[mx.uint32], grid=(N, 1, 1),
                     threadgroup=(256, 1, 1))[0]
        mx.eval(out)
        sys.exit("the endless kernel returned")
    except RuntimeError as e:
        message = str(e)
    seconds = time.time() - start
    print("raised after %.1f s: %s" % (seconds, message))
    assert "timed out" in message.lower() or "did not finish" in message, message
    assert "were stopped" in message, message

    # What was made before is intact and still on the GPU's device.
    assert np.array_equal(np.array(before), np.arange(100003, dtype=np.float32) * 2 + 1)
    w = np.array(weights)
    assert np.allclose(np.array(product), np.exp(w) * w, rtol=1e-5, atol=1e-6)
    # New work runs: MLX's own kernels and a correct custom kernel.
    assert (mx.arange(8) * 2).tolist() == [0, 2, 4, 6, 8, 10, 12, 14]
    assert np.allclose(np.array(product + before[:256]), np.exp(w) * w + np.array(before)[:256], rtol=1e-5, atol=1e-6)
    twice = mx.fast.metal_kernel(name="twice", input_names=["x"], output_names=["y"],
                                 source="uint i = thread_position_in_grid.x; y[i] = 2 * x[i];")
    y = twice(inputs=[before], output_shapes=[before.shape], output_dtypes=[mx.float32],
              grid=(before.size, 1, 1), threadgroup=(256, 1, 1))[0]
    assert np.array_equal(np.array(y), 2 * np.array(before))
    print("recovered")
''')


class RunawayKernel(unittest.TestCase):
    def run_case(self, case):
        if mx_default_device_is_cpu():
            self.skipTest("MLX's default device is the CPU: no GPU kernel to stop")
        env = dict(os.environ, M2V_TIMEOUT_MS="2000")
        r = subprocess.run([sys.executable, "-c", CHILD, case], capture_output=True, text=True, timeout=300,
                           env=env)
        self.assertEqual(r.returncode, 0, f"stdout:\n{r.stdout}\nstderr:\n{r.stderr[-4000:]}")
        self.assertIn("recovered", r.stdout)

    def test_spin_wait_on_a_flag_never_set(self):
        self.run_case("spin")

    def test_loop_far_past_the_budget(self):
        self.run_case("long")


def mx_default_device_is_cpu():
    import mlx.core as mx
    return mx.default_device() == mx.cpu


if __name__ == "__main__":
    unittest.main()
