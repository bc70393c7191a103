"""MLX's unified memory on metal2vk: what the GPU wrote, the CPU reads; what the CPU wrote, the next GPU operation
reads; host arrays adopted without a copy.

    python3 -m unittest test_host_memory      (PYTHONPATH: the mlx package; run_mlx_python_tests.py --tests DIR)

Run as it is (lavapipe: shared buffers are host memory) and with M2V_HOST_MIRROR=1 (the host mirrors a discrete
GPU gets, docs/METAL_API.md): each result is checked against NumPy on the same data. Elementwise operations only,
so that every kernel runs on any subgroup size.
"""
import mmap
import unittest

import mlx.core as mx
import numpy as np


def page_aligned(values):
    """A NumPy array over fresh anonymous pages (page-aligned, as Apple's no-copy buffers are documented to need)."""
    pages = mmap.mmap(-1, max(values.nbytes, 1))
    array = np.frombuffer(pages, dtype=values.dtype, count=values.size).reshape(values.shape)
    array[...] = values
    return array


class TestHostMemory(unittest.TestCase):
    def setUp(self):
        mx.set_default_device(mx.gpu)
        self.rng = np.random.default_rng(41)

    def test_gpu_write_then_cpu_read(self):
        for n in (1, 1000, 1 << 20):
            x = self.rng.standard_normal(n).astype(np.float32)
            y = mx.array(x) * 3 + 1
            np.testing.assert_array_equal(np.array(y), x * np.float32(3) + np.float32(1))
            self.assertEqual(y.tolist()[-1], float(x[-1] * np.float32(3) + np.float32(1)))

    def test_cpu_task_between_gpu_operations(self):
        x = self.rng.standard_normal((64, 257)).astype(np.float32)
        a = mx.add(mx.array(x), 1, stream=mx.gpu)
        b = mx.multiply(a, 2, stream=mx.cpu)  # reads the GPU's result, writes what the next GPU operation reads
        c = mx.subtract(b, 3, stream=mx.gpu)
        expected = (x + np.float32(1)) * np.float32(2) - np.float32(3)
        np.testing.assert_array_equal(np.array(c), expected)

    def test_buffers_reused_between_cpu_and_gpu(self):
        # MLX's allocator hands freed buffers to the next arrays of the same size: each round's CPU and GPU results
        # must be the round's own.
        for round in range(20):
            x = np.full(4096, round, dtype=np.int32)
            g = mx.array(x) + 7
            mx.eval(g)
            c = mx.multiply(g, 2, stream=mx.cpu)
            d = mx.add(c, 1, stream=mx.gpu)
            np.testing.assert_array_equal(np.array(d), np.full(4096, (round + 7) * 2 + 1, dtype=np.int32))
            del g, c, d

    def adopt(self, array):
        try:
            return mx.asarray(array, copy=False)
        except ValueError as e:
            self.skipTest(f"this device cannot wrap host memory ({e})")

    def test_adopted_page_aligned_array(self):
        values = np.arange(1 << 18, dtype=np.float32)
        host = page_aligned(values)
        x = self.adopt(host)
        np.testing.assert_array_equal(np.array(x + 1), values + 1)
        host[5] = -42.0  # the CPU writes the adopted memory: the next GPU operation reads it
        self.assertEqual((x * 2)[5].item(), -84.0)

    def test_adopted_array_inside_a_page(self):
        # Not page-aligned (NumPy's own allocation, offset by one element): MLX adopts any host array it can.
        backing = np.arange(5000, dtype=np.int32)
        host = backing[1:]
        x = self.adopt(host)
        host[0] = 1234
        np.testing.assert_array_equal(np.array(x - 1), np.concatenate(([1233], np.arange(2, 5000) - 1)))

    def test_adopted_arrays_in_a_loop(self):
        # Each adopted buffer is released with its array (never recycled into the allocator's pool for others).
        for i in range(50):
            host = np.full(3000, i, dtype=np.int32)
            x = self.adopt(host)
            np.testing.assert_array_equal(np.array(x + 1), host + 1)


if __name__ == "__main__":
    unittest.main()
