"""Every quantization MLX offers, on the GPU (MLX's Metal backend on metal2vk) against MLX's own CPU backend.

    python3 -m unittest test_quantized_matrix      (PYTHONPATH: the mlx package; run_mlx_python_tests.py --tests DIR)

Modes: affine with bits 2, 3, 4, 5, 6, 8 and group sizes 32, 64, 128; mxfp4, mxfp8, nvfp4 (their fixed group sizes).
For each: mx.quantize (scales and biases within a few roundings of the CPU's, codes at most one step apart and
nearly all equal: the two sides may contract a multiply-add or round a division differently, as Apple's GPU and CPU
do) and mx.dequantize (within a rounding of the result type), quantized_matmul with M = 1 (qmv: each decode
step), M = 5 (batched qmv) and M = 64 (qmm), transpose True and False, float32, float16 and bfloat16 activations;
gather_qmm with expert indices. The CPU backend is the reference: the same weights, the same quantized bits.

Tolerance of the products: both sides dequantize the same bits and accumulate in float32, in different orders, and
round the result to the activation type. The difference is then a few roundings of the output type relative to the
largest output, |gpu - cpu| <= 4 * eps(dtype) * max|cpu| + 1e-6 (eps: 2^-23 float32 widened to 2^-20 for the
K-long float32 sums, 2^-10 float16, 2^-7 bfloat16): a wrong weight, scale or group shifts outputs by
O(max|cpu| / sqrt(K)) or more, far above it.

A kernel the device cannot run (MLX's quantized kernels use 32-wide simdgroups; lavapipe has 8 lanes) makes the case
skip, saying so; every other failure fails.
"""
import itertools
import unittest

import mlx.core as mx
import numpy as np

AFFINE = [("affine", bits, gs) for bits in (2, 3, 4, 5, 6, 8) for gs in (32, 64, 128)]
FLOAT_MODES = [("mxfp4", 4, 32), ("mxfp8", 8, 32), ("nvfp4", 4, 16)]
DTYPES = {mx.float32: 2.0 ** -20, mx.float16: 2.0 ** -10, mx.bfloat16: 2.0 ** -7}
ROWS = (1, 5, 64)
N, K = 256, 512


def cannot_run(error):
    text = str(error)
    return "32-wide" in text or "subgroup" in text or "simdgroup" in text


class QuantizedMatrix(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        try:
            mx.eval(mx.quantize(mx.ones((32, 64)), group_size=32, bits=4))
        except RuntimeError as error:
            if not cannot_run(error):
                raise
            raise unittest.SkipTest("the GPU cannot run MLX's quantized kernels here: %s" %
                                    " ".join(str(error).split()))

    def run_both(self, fn, *args):
        """fn(*args) on the GPU and on the CPU stream; numpy float64 (or raw integer) results."""
        out = []
        for device in (mx.gpu, mx.cpu):
            with mx.stream(device):
                result = fn(*args)
                result = result if isinstance(result, (list, tuple)) else [result]
                mx.eval(result)
                out.append([np.array(r.astype(mx.float32) if r.dtype in (mx.bfloat16, mx.float16) else r)
                            for r in result])
        return out

    def guarded(self, fn, *args):
        try:
            return self.run_both(fn, *args)
        except RuntimeError as error:
            if cannot_run(error):
                self.skipTest("the GPU cannot run MLX's quantized kernels here: %s" % " ".join(str(error).split()))
            raise

    def weights(self, mode, bits, gs, dtype, shape=(N, K), seed=0):
        mx.random.seed(seed)
        w = (mx.random.normal(shape) * 0.1).astype(dtype)
        with mx.stream(mx.cpu):
            packed = mx.quantize(w, group_size=gs, bits=bits, mode=mode)
            mx.eval(packed)
        wq, scales = packed[0], packed[1]
        biases = packed[2] if mode == "affine" else None
        return w, wq, scales, biases

    def assert_close(self, gpu, cpu, dtype, what):
        scale = float(np.max(np.abs(cpu))) if cpu.size else 0.0
        bound = 4 * DTYPES[dtype] * scale + 1e-6
        err = float(np.max(np.abs(gpu.astype(np.float64) - cpu.astype(np.float64)))) if cpu.size else 0.0
        self.assertLessEqual(err, bound, "%s: max|gpu - cpu| = %.3g > %.3g (max|cpu| %.3g)" % (what, err, bound, scale))

    def check_quantize(self, mode, bits, gs):
        for dtype in DTYPES:
            with self.subTest(mode=mode, bits=bits, group_size=gs, dtype=dtype):
                mx.random.seed(1)
                w = (mx.random.normal((128, 256)) * 0.1).astype(dtype)
                gpu, cpu = self.guarded(lambda a: mx.quantize(a, group_size=gs, bits=bits, mode=mode), w)
                # Scales and biases: the same formula, a rounding apart (a contracted multiply-add, a division).
                for g, c, name in zip(gpu[1:], cpu[1:], ("scales", "biases")):
                    np.testing.assert_allclose(g, c, rtol=4 * self.type_eps(dtype), atol=0, err_msg=name)
                # Codes: a value on a rounding boundary may take the next code on one side; each code is at most
                # one step from the CPU's, and nearly all are equal.
                codes = [np.array(mx.dequantize(mx.array(side[0]), mx.array(cpu[1]),
                                                mx.array(cpu[2]) if mode == "affine" else None, group_size=gs,
                                                bits=bits, mode=mode, dtype=mx.float32, stream=mx.cpu))
                         for side in (gpu, cpu)]
                differ = codes[0] != codes[1]
                self.assertLessEqual(int(differ.sum()), max(1, differ.size // 100), "codes of mx.quantize")
                a, b = codes[0][differ], codes[1][differ]
                if mode == "affine":  # one step: the group's scale
                    step = np.repeat(np.abs(cpu[1]), gs, axis=-1)[differ]
                    self.assertTrue(np.all(np.abs(a - b) <= step * 1.0001), "a code more than a step off")
                else:  # neighbours on the E2M1 / E4M3 grid: at most half the larger apart, or zero and the least
                    near = (np.abs(a - b) <= 0.5 * np.maximum(np.abs(a), np.abs(b))) | (np.minimum(abs(a), abs(b)) == 0)
                    self.assertTrue(np.all(near), "a code more than a step off")
                _, wq, scales, biases = self.weights(mode, bits, gs, dtype, (128, 256))
                gpu, cpu = self.guarded(
                    lambda q, s, b: mx.dequantize(q, s, b, group_size=gs, bits=bits, mode=mode, dtype=dtype),
                    wq, scales, biases)
                # scale * code + bias: a contracted multiply-add on one side, one rounding of the result's type.
                np.testing.assert_allclose(gpu[0], cpu[0], rtol=2 * self.type_eps(dtype),
                                           atol=self.type_eps(dtype) * float(np.max(np.abs(cpu[0]))),
                                           err_msg="mx.dequantize")

    @staticmethod
    def type_eps(dtype):
        return {mx.float32: 2.0 ** -23, mx.float16: 2.0 ** -10, mx.bfloat16: 2.0 ** -7}[dtype]

    def check_matmul(self, mode, bits, gs):
        for dtype, transpose in itertools.product(DTYPES, (True, False)):
            shape = (N, K) if transpose else (K, N)
            _, wq, scales, biases = self.weights(mode, bits, gs, dtype, shape)
            for rows in ROWS:
                with self.subTest(mode=mode, bits=bits, group_size=gs, dtype=dtype, transpose=transpose, M=rows):
                    mx.random.seed(2)
                    x = mx.random.normal((rows, K)).astype(dtype)
                    gpu, cpu = self.guarded(
                        lambda a: mx.quantized_matmul(a, wq, scales, biases, transpose=transpose, group_size=gs,
                                                      bits=bits, mode=mode), x)
                    self.assert_close(gpu[0], cpu[0], dtype, "quantized_matmul")

    def test_gather_qmm_matches_the_cpu(self):
        experts = 4
        for (mode, bits, gs), dtype in itertools.product(
                [("affine", 4, 64), ("affine", 8, 32), ("affine", 3, 128)] + FLOAT_MODES, DTYPES):
            _, wq, scales, biases = self.weights(mode, bits, gs, dtype, (experts, N, K))
            for rows in (1, 16):
                with self.subTest(mode=mode, bits=bits, group_size=gs, dtype=dtype, M=rows):
                    mx.random.seed(3)
                    x = mx.random.normal((6, 1, rows, K)).astype(dtype)
                    indices = mx.array([[3], [0], [2], [2], [1], [3]], dtype=mx.uint32)
                    gpu, cpu = self.guarded(
                        lambda a: mx.gather_qmm(a, wq, scales, biases, rhs_indices=indices, transpose=True,
                                                group_size=gs, bits=bits, mode=mode), x)
                    self.assert_close(gpu[0], cpu[0], dtype, "gather_qmm")


def add_cases():
    """One test per mode and bit width (its group sizes inside), so that each reports on its own."""
    by_bits = {}
    for mode, bits, gs in AFFINE + FLOAT_MODES:
        by_bits.setdefault((mode, bits), []).append(gs)
    for (mode, bits), sizes in by_bits.items():
        name = "%s_%dbit" % (mode, bits)
        def quantize_case(self, m=mode, b=bits, g=tuple(sizes)):
            for gs in g:
                self.check_quantize(m, b, gs)

        def matmul_case(self, m=mode, b=bits, g=tuple(sizes)):
            for gs in g:
                self.check_matmul(m, b, gs)

        setattr(QuantizedMatrix, "test_quantize_dequantize_" + name, quantize_case)
        setattr(QuantizedMatrix, "test_quantized_matmul_" + name, matmul_case)


add_cases()

if __name__ == "__main__":
    unittest.main()
