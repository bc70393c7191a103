"""MetalPerformancePrimitives' matmul2d on cooperative tensors (Metal 4), on both simdgroup-matrix paths.

Each kernel fills its cooperative tensors element by element through the documented layout (docs/STDLIB.md: 16x16
blocks in row-major block order; element i of a block at row fm + 8 * (i / 4), column fn + i % 4), runs one
matmul2d, and writes the destination back through the same layout, so a wrong layout or a wrong product both show.
Inputs are small multiples of 1/4: every product and sum is exact in half, bfloat and float, so results are
compared exactly with a float64 reference. The kernels need 32-wide simdgroups (not lavapipe: skipped there)."""
import numpy as np
import pytest

import metal2vk as m2v
from conftest import bind_arrays, stream_with

SOURCE = """
#include <metal_stdlib>
#include <MetalPerformancePrimitives/MetalPerformancePrimitives.h>
using namespace metal;

// (column, row) of a lane's element i within a 16x16 block
inline short2 block_position(ushort lane, int i) {
  short q = lane >> 2;
  short fm = (q & 4) | ((lane >> 1) & 3);
  short fn = ((q & 2) | (lane & 1)) * 4;
  return short2(fn + i % 4, fm + (i / 4) * 8);
}

// a cooperative tensor of a Rows x Cols row-major matrix, from memory or back
template <class CT, class T>
inline void fill(thread CT& ct, const device T* src, int rows, int cols, ushort lane) {
  for (int b = 0; b < (rows / 16) * (cols / 16); ++b)
    for (int i = 0; i < 8; ++i) {
      short2 p = block_position(lane, i);
      ct[b * 8 + i] = src[((b / (cols / 16)) * 16 + p.y) * cols + (b % (cols / 16)) * 16 + p.x];
    }
}
template <class CT>
inline void drain(const thread CT& ct, device float* dst, int rows, int cols, ushort lane) {
  for (int b = 0; b < (rows / 16) * (cols / 16); ++b)
    for (int i = 0; i < 8; ++i) {
      short2 p = block_position(lane, i);
      dst[((b / (cols / 16)) * 16 + p.y) * cols + (b % (cols / 16)) * 16 + p.x] = ct[b * 8 + i];
    }
}

// C = A * B (+ C): A stored M x K (K x M when TA), B stored K x N (N x K when TB), C M x N float
template <class T, int M, int N, int K, bool TA, bool TB, bool ACC>
[[kernel]] void mm(const device T* A [[buffer(0)]], const device T* B [[buffer(1)]], device float* C [[buffer(2)]],
                   ushort lane [[thread_index_in_simdgroup]]) {
  constexpr auto desc = mpp::tensor_ops::matmul2d_descriptor(
      M, N, K, TA, TB, true,
      ACC ? mpp::tensor_ops::matmul2d_descriptor::mode::multiply_accumulate
          : mpp::tensor_ops::matmul2d_descriptor::mode::multiply);
  mpp::tensor_ops::matmul2d<desc, execution_simdgroup> op;
  auto a = op.template get_left_input_cooperative_tensor<T, T, float>();
  auto b = op.template get_right_input_cooperative_tensor<T, T, float>();
  auto c = op.template get_destination_cooperative_tensor<remove_addrspace_t<decltype(a)>,
                                                         remove_addrspace_t<decltype(b)>, float>();
  fill(a, A, TA ? K : M, TA ? M : K, lane);
  fill(b, B, TB ? N : K, TB ? K : N, lane);
  fill(c, C, M, N, lane);
  op.run(a, b, c);
  drain(c, C, M, N, lane);
}

#define MM(name, T, M, N, K, TA, TB, ACC) \\
  template [[host_name(#name)]] [[kernel]] void mm<T, M, N, K, TA, TB, ACC>( \\
      const device T*, const device T*, device float*, ushort);
MM(half_16x32x16_nn, half, 16, 32, 16, false, false, true)
MM(half_32x16x16_nn, half, 32, 16, 16, false, false, true)
MM(half_16x32x16_tn, half, 16, 32, 16, true, false, true)
MM(half_32x16x16_nt, half, 32, 16, 16, false, true, true)
MM(half_32x32x32_tt, half, 32, 32, 32, true, true, false)
MM(bfloat_16x32x16_nn, bfloat, 16, 32, 16, false, false, true)
MM(bfloat_32x16x16_tt, bfloat, 32, 16, 16, true, true, true)
MM(float_16x32x16_nt, float, 16, 32, 16, false, true, true)

// A float left input beside a half right input; RELAXED is the descriptor's relaxed_precision.
template <int M, int N, int K, bool TB, bool RELAXED>
[[kernel]] void mixed(const device float* A [[buffer(0)]], const device half* B [[buffer(1)]],
                      device float* C [[buffer(2)]], ushort lane [[thread_index_in_simdgroup]]) {
  constexpr auto desc = mpp::tensor_ops::matmul2d_descriptor(
      M, N, K, false, TB, RELAXED, mpp::tensor_ops::matmul2d_descriptor::mode::multiply_accumulate);
  mpp::tensor_ops::matmul2d<desc, execution_simdgroup> op;
  auto a = op.template get_left_input_cooperative_tensor<float, half, float>();
  auto b = op.template get_right_input_cooperative_tensor<float, half, float>();
  auto c = op.template get_destination_cooperative_tensor<remove_addrspace_t<decltype(a)>,
                                                         remove_addrspace_t<decltype(b)>, float>();
  fill(a, A, M, K, lane);
  fill(b, B, TB ? N : K, TB ? K : N, lane);
  fill(c, C, M, N, lane);
  op.run(a, b, c);
  drain(c, C, M, N, lane);
}
template [[host_name("mixed_relaxed_nn")]] [[kernel]] void mixed<16, 32, 16, false, true>(
    const device float*, const device half*, device float*, ushort);
template [[host_name("mixed_relaxed_nt")]] [[kernel]] void mixed<16, 32, 16, true, true>(
    const device float*, const device half*, device float*, ushort);
template [[host_name("mixed_strict_nn")]] [[kernel]] void mixed<16, 32, 16, false, false>(
    const device float*, const device half*, device float*, ushort);
"""

CASES = {
    # name: (element, M, N, K, transpose A, transpose B, accumulate)
    "half_16x32x16_nn": ("half", 16, 32, 16, False, False, True),
    "half_32x16x16_nn": ("half", 32, 16, 16, False, False, True),
    "half_16x32x16_tn": ("half", 16, 32, 16, True, False, True),
    "half_32x16x16_nt": ("half", 32, 16, 16, False, True, True),
    "half_32x32x32_tt": ("half", 32, 32, 32, True, True, False),
    "bfloat_16x32x16_nn": ("bfloat", 16, 32, 16, False, False, True),
    "bfloat_32x16x16_tt": ("bfloat", 32, 16, 16, True, True, True),
    "float_16x32x16_nt": ("float", 16, 32, 16, False, True, True),
}


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    path = tmp_path_factory.mktemp("tensor_ops") / "tensor_ops.metal"
    path.write_text(SOURCE)
    return str(path), m2v.compile_library(str(path))


def test_builds(lib):
    _, library = lib
    # 16-bit products have a cooperative-matrix build; float ones stay on shuffles (no f32 matrix inputs)
    for name, (element, *_rest) in CASES.items():
        coop = library[name].cooperative_reflection
        if element == "float":
            assert coop is None, name
        else:
            assert coop is not None and coop["cooperative_matrix_multiplies"] >= 1, name


def run_one_simdgroup(kernel, arrays, out_shape):
    """Binds `arrays` at buffers 0.. (the last one is C, read back as float32 of out_shape) and runs one simdgroup;
    skips where the device cannot run 32-wide simdgroups (lavapipe)."""
    s = stream_with(kernel)
    if kernel.emulates_simdgroups and np.asarray(arrays[0]).size * out_shape[1] > 16 * 32 * 16:  # M K N
        pytest.skip("emulated simdgroups (this device has no 32-wide ones): the larger products build for minutes on "
                    "lavapipe; the smaller ones check the emulation")
    bufs = bind_arrays(s, arrays)
    s.dispatch_threadgroups((1, 1, 1), (32, 1, 1))
    return s.read(bufs[-1], np.float32, out_shape)


def bfloat_bits(x):
    return (np.asarray(x, np.float32).view(np.uint32) >> 16).astype(np.uint16)


@pytest.mark.parametrize("name", sorted(CASES))
def test_matmul2d(lib, matrix_path, name):
    element, M, N, K, ta, tb, acc = CASES[name]
    if matrix_path == "cooperative" and element != "float":
        why = m2v.cooperative_matrix_unavailable_reason("bf16" if element == "bfloat" else "f16")
        if why:
            pytest.skip(f"cooperative path unavailable for {element}: {why}")
    rng = np.random.default_rng(sum(map(ord, name)))
    A = rng.integers(-8, 9, size=(K, M) if ta else (M, K)).astype(np.float32) / 4
    B = rng.integers(-8, 9, size=(N, K) if tb else (K, N)).astype(np.float32) / 4
    C = rng.integers(-8, 9, size=(M, N)).astype(np.float32) / 4
    as_stored = {"half": lambda x: x.astype(np.float16), "bfloat": bfloat_bits, "float": lambda x: x}[element]
    kernel = m2v.compile_library(lib[0], entries=[name])[name]
    got = run_one_simdgroup(kernel, [as_stored(A), as_stored(B), C], (M, N))
    a = A.T if ta else A
    b = B.T if tb else B
    want = a.astype(np.float64) @ b.astype(np.float64) + (C if acc else 0)
    np.testing.assert_array_equal(got, want)
    if element != "float":
        assert kernel.simdgroup_matrix_path == ("cooperative_matrix" if matrix_path == "cooperative" else "shuffle")


MIXED = {"mixed_relaxed_nn": (True, False), "mixed_relaxed_nt": (True, True), "mixed_strict_nn": (False, False)}


def test_mixed_builds(lib):
    # relaxed precision rounds the float operand to half: a 16-bit product, with a cooperative-matrix build;
    # without it the product stays in float, on shuffles
    _, library = lib
    for name, (relaxed, _tb) in MIXED.items():
        coop = library[name].cooperative_reflection
        assert (coop is not None and coop["cooperative_matrix_multiplies"] >= 1) == relaxed, name


@pytest.mark.parametrize("name", sorted(MIXED))
def test_matmul2d_float_by_half(lib, matrix_path, name):
    """A float operand beside a half one: with relaxed_precision it is rounded to half (the product is then that of
    the rounded values, exactly: products of halves and multiples of 1/4 are exact in float for these sizes);
    without it the product keeps the float values (A is k/3, not a half)."""
    relaxed, tb = MIXED[name]
    if matrix_path == "cooperative" and relaxed:
        why = m2v.cooperative_matrix_unavailable_reason("f16")
        if why:
            pytest.skip(f"cooperative path unavailable: {why}")
    M, N, K = 16, 32, 16
    rng = np.random.default_rng(sum(map(ord, name)))
    A = (rng.integers(-24, 25, size=(M, K)) / 3).astype(np.float32)
    B = rng.integers(-8, 9, size=(N, K) if tb else (K, N)).astype(np.float32) / 4
    C = rng.integers(-8, 9, size=(M, N)).astype(np.float32) / 4
    kernel = m2v.compile_library(lib[0], entries=[name])[name]
    got = run_one_simdgroup(kernel, [A, B.astype(np.float16), C], (M, N)).astype(np.float64)
    a = A.astype(np.float16).astype(np.float64) if relaxed else A.astype(np.float64)
    want = a @ (B.T if tb else B).astype(np.float64) + C
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-5)
    if relaxed:
        # the rounding is what makes the difference: the unrounded product is further off than float's error
        exact = A.astype(np.float64) @ (B.T if tb else B).astype(np.float64) + C
        assert np.max(np.abs(got - exact)) > 1e-3
