"""simdgroup_matrix multiplies on both paths: subgroup shuffles and cooperative matrices (docs/SIMDGROUP_MATRIX.md).

Each kernel runs once with M2V_SIMDGROUP_MATRIX=shuffle and once with =cooperative, and both must match a float64
reference. The cooperative path needs a device with VK_KHR_cooperative_matrix whose lane layout passed the probe;
elsewhere those cases are skipped, saying why. Every kernel needs 32-wide simdgroups (not lavapipe)."""

import numpy as np
import pytest

import metal2vk as m2v
from conftest import bind_arrays, stream_with

SOURCE = """
#include <metal_stdlib>
using namespace metal;

// C = A * B, half inputs, float accumulator carried across the k loop (the accumulator stays in the device's
// layout). One simdgroup per 16x16 block: two row fragments share each B fragment (a paired 16x8x8 operation).
[[kernel]] void gemm_half(device const half* A [[buffer(0)]], device const half* B [[buffer(1)]],
                          device float* C [[buffer(2)]], constant uint3& mnk [[buffer(3)]],
                          uint2 tg [[threadgroup_position_in_grid]]) {
  uint row0 = tg.y * 16, col0 = tg.x * 16, K = mnk.z, N = mnk.y;
  simdgroup_float8x8 acc[2][2];
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int j = 0; j < 2; ++j) acc[i][j] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
  for (uint k = 0; k < K; k += 8) {
    simdgroup_half8x8 a[2], b[2];
#pragma unroll
    for (int i = 0; i < 2; ++i) simdgroup_load(a[i], A + (row0 + 8 * i) * K + k, K);
#pragma unroll
    for (int j = 0; j < 2; ++j) simdgroup_load(b[j], B + k * N + col0 + 8 * j, N);
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
      for (int j = 0; j < 2; ++j) simdgroup_multiply_accumulate(acc[i][j], a[i], b[j], acc[i][j]);
  }
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int j = 0; j < 2; ++j) simdgroup_store(acc[i][j], C + (row0 + 8 * i) * N + col0 + 8 * j, N);
}

// MLX's pattern: fragments filled element by element through thread_elements() from threadgroup memory as float
// (converted from half), B read transposed, and the accumulator scaled between steps through thread_elements().
[[kernel]] void elements_tg(device const half* A [[buffer(0)]], device const half* Bt [[buffer(1)]],
                            device float* C [[buffer(2)]], ushort lane [[thread_index_in_simdgroup]]) {
  threadgroup half as[8 * 16], bs[8 * 16];
  for (uint i = lane; i < 128; i += 32) { as[i] = A[i]; bs[i] = Bt[i]; }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  ushort q = lane / 4, fm = (q & 4) + ((lane / 2) % 4), fn = (q & 2) * 2 + (lane % 2) * 2;
  simdgroup_float8x8 acc(0.0f);
  for (int k = 0; k < 16; k += 8) {
    simdgroup_float8x8 a, b;
    a.thread_elements()[0] = float(as[fm * 16 + k + fn]);
    a.thread_elements()[1] = float(as[fm * 16 + k + fn + 1]);
    b.thread_elements()[0] = float(bs[fn * 16 + k + fm]);        // B[k + fm][fn] = Bt[fn][k + fm]
    b.thread_elements()[1] = float(bs[(fn + 1) * 16 + k + fm]);
    simdgroup_multiply_accumulate(acc, a, b, acc);
    acc.thread_elements() *= 0.5f;
  }
  C[fm * 8 + fn] = acc.thread_elements()[0];
  C[fm * 8 + fn + 1] = acc.thread_elements()[1];
}

// bfloat inputs, two k steps per iteration of a 16x16 block: pairs that share B, chained along k, that share A:
// whole 16x16x16 operations, the device's one bfloat shape.
[[kernel]] void gemm_bfloat(device const bfloat* A [[buffer(0)]], device const bfloat* B [[buffer(1)]],
                            device float* C [[buffer(2)]], constant uint3& mnk [[buffer(3)]],
                            uint2 tg [[threadgroup_position_in_grid]]) {
  uint row0 = tg.y * 16, col0 = tg.x * 16, K = mnk.z, N = mnk.y;
  simdgroup_float8x8 acc[2][2];
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int j = 0; j < 2; ++j) acc[i][j] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
  for (uint k = 0; k < K; k += 16) {
#pragma unroll
    for (uint kk = k; kk < k + 16; kk += 8) {
      simdgroup_bfloat8x8 a[2], b[2];
#pragma unroll
      for (int i = 0; i < 2; ++i) simdgroup_load(a[i], A + (row0 + 8 * i) * K + kk, K);
#pragma unroll
      for (int j = 0; j < 2; ++j) simdgroup_load(b[j], B + kk * N + col0 + 8 * j, N);
#pragma unroll
      for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int j = 0; j < 2; ++j) simdgroup_multiply_accumulate(acc[i][j], a[i], b[j], acc[i][j]);
    }
  }
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int j = 0; j < 2; ++j) simdgroup_store(acc[i][j], C + (row0 + 8 * i) * N + col0 + 8 * j, N);
}

// One bfloat multiply on its own: a 16x16x16 operation mostly of zeros; B transposed.
[[kernel]] void one_bfloat(device const bfloat* A [[buffer(0)]], device const bfloat* Bt [[buffer(1)]],
                           device float* C [[buffer(2)]]) {
  simdgroup_bfloat8x8 a, b;
  simdgroup_float8x8 c;
  simdgroup_load(a, A);
  simdgroup_load(b, Bt, 8, ulong2(0), true);
  simdgroup_multiply(c, a, b);
  simdgroup_store(c, C);
}

// B from a threadgroup tile with a 16-byte row stride, written in whole words: a cooperative-matrix load.
struct Row8 { half v[8]; };
[[kernel]] void tile_b(device const half* A [[buffer(0)]], device const half* B [[buffer(1)]],
                       device float* C [[buffer(2)]], ushort lane [[thread_index_in_simdgroup]]) {
  threadgroup half bs[8 * 8];
  if (lane < 8) *(threadgroup Row8*)(bs + 8 * lane) = *(const device Row8*)(B + 8 * lane);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  simdgroup_half8x8 a, b;
  simdgroup_float8x8 c(0.0f);
  simdgroup_load(a, A);
  simdgroup_load(b, bs);
  simdgroup_multiply_accumulate(c, a, b, c);
  simdgroup_store(c, C);
}

// float operands: no f32 matrix units, so this multiply stays on subgroup shuffles in both builds.
[[kernel]] void gemm_float(device const float* A [[buffer(0)]], device const float* B [[buffer(1)]],
                           device float* C [[buffer(2)]]) {
  simdgroup_float8x8 a, b, c;
  simdgroup_load(a, A);
  simdgroup_load(b, B);
  simdgroup_multiply(c, a, b);
  simdgroup_store(c, C);
}
"""


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    path = tmp_path_factory.mktemp("sgm") / "sgm.metal"
    path.write_text(SOURCE)
    return m2v.compile_library(str(path))


def test_builds(lib):
    # Two half multiplies qualify; the float one has no cooperative build.
    assert lib["gemm_half"].cooperative_reflection["cooperative_matrix_multiplies"] >= 1
    assert "CooperativeMatrixKHR" in lib["gemm_half"].cooperative_reflection["capabilities"]
    assert "CooperativeMatrixKHR" not in lib["gemm_half"].reflection["capabilities"]
    assert lib["elements_tg"].cooperative_reflection is not None
    assert lib["gemm_float"].cooperative_reflection is None
    # bfloat multiplies run on the device's 16x16x16 bfloat matrices (SPV_KHR_bfloat16)
    for name in ("gemm_bfloat", "one_bfloat"):
        r = lib[name].cooperative_reflection
        assert r["cooperative_matrix_shapes"] == ["16x16x16 bf16*bf16+f32"]
        assert "BFloat16CooperativeMatrixKHR" in r["capabilities"]
    assert lib["gemm_half"].cooperative_reflection["cooperative_matrix_shapes"] == ["16x8x8 f16*f16+f32"]


class Spirv:
    """The instructions of a SPIR-V module, enough to follow types and constants (SPIRV-Tools here predates the
    cooperative-matrix and bfloat16 extensions)."""
    TYPE_INT, TYPE_FLOAT, TYPE_POINTER, CONSTANT, ACCESS_CHAIN = 21, 22, 32, 43, 65
    TYPE_COOPMAT, COOPMAT_LOAD, COOPMAT_MULADD, CAPABILITY, EXTENSION = 4456, 4457, 4459, 17, 10

    def __init__(self, data):
        words = np.frombuffer(data, dtype=np.uint32)
        self.insts, at = [], 5
        while at < len(words):
            n = int(words[at] >> 16)
            self.insts.append((int(words[at] & 0xFFFF), [int(w) for w in words[at + 1:at + n]]))
            at += n
        self.defs = {}
        for op, args in self.insts:
            if op in (self.TYPE_INT, self.TYPE_FLOAT, self.TYPE_POINTER, self.TYPE_COOPMAT):
                self.defs[args[0]] = (op, args[1:])
            elif op in (self.CONSTANT, self.ACCESS_CHAIN):
                self.defs[args[1]] = (op, [args[0]] + args[2:])

    def all(self, opcode):
        return [args for op, args in self.insts if op == opcode]

    def constant(self, id_):
        op, args = self.defs[id_]
        assert op == self.CONSTANT
        return args[1]

    def matrices(self):
        """(component: 'f16' | 'bf16' | 'f32', rows, columns, use) of each cooperative matrix type"""
        out = []
        for args in self.all(self.TYPE_COOPMAT):
            op, comp = self.defs[args[1]]
            name = {(16,): "f16", (16, 0): "bf16", (32,): "f32"}[tuple(comp)]
            out.append((name, self.constant(args[3]), self.constant(args[4]), self.constant(args[5])))
        return sorted(out)


def test_cooperative_builds_bfloat_on_16x16x16(lib):
    # what the emitter writes for bfloat: 16x16 A, B and accumulator of SPV_KHR_bfloat16's bfloat type
    spv = Spirv(lib["gemm_bfloat"].cooperative_spirv)
    assert spv.matrices() == [("bf16", 16, 16, 0), ("bf16", 16, 16, 1), ("f32", 16, 16, 2)]
    assert len(spv.all(Spirv.COOPMAT_MULADD)) >= 1
    caps = {args[0] for args in spv.all(Spirv.CAPABILITY)}
    assert {5116, 5118, 6022} <= caps  # BFloat16TypeKHR, BFloat16CooperativeMatrixKHR, CooperativeMatrixKHR
    half = Spirv(lib["gemm_half"].cooperative_spirv)
    assert half.matrices() == [("f16", 8, 8, 1), ("f16", 16, 8, 0), ("f32", 16, 8, 2)]


def test_cooperative_load_of_a_threadgroup_tile(lib):
    # B from the tile: one OpCooperativeMatrixLoadKHR, row-major, its stride (16 bytes) counted in the tile's
    # element type (the tile is written in 4-byte words, so 4 elements)
    # (one such load on each path where lower/WidenAccesses.cpp adds a widened copy of the kernel: two at most)
    spv = Spirv(lib["tile_b"].cooperative_spirv)
    loads = spv.all(Spirv.COOPMAT_LOAD)
    assert 1 <= len(loads) <= 2
    for load in loads:
        _, _, pointer, layout, stride = load[:5]
        pointee = spv.defs[spv.defs[spv.defs[pointer][1][0]][1][1]]
        assert spv.constant(layout) == 0
        assert spv.constant(stride) * pointee[1][0] // 8 == 16
    assert lib["tile_b"].reflection["capabilities"].count("CooperativeMatrixKHR") == 0


@pytest.fixture
def path(request, matrix_path):
    if matrix_path == "cooperative":
        element = "bf16" if "bfloat" in request.node.name else "f16"
        why = m2v.cooperative_matrix_unavailable_reason(element)
        if why:
            pytest.skip(f"cooperative path unavailable for {element}: " + why)
    return matrix_path


def run(kernel, arrays, out_shape, groups, threads=(32, 1, 1), scalars=()):
    s = stream_with(kernel)  # lavapipe: no 32-wide simdgroups
    bind_arrays(s, arrays)
    out = m2v.Buffer(int(np.prod(out_shape)) * 4)
    s.set_buffer(out, len(arrays))
    for k, v in scalars:
        s.set_bytes(v, k)
    s.dispatch_threadgroups(groups, threads)
    return s.read(out, np.float32, out_shape)


def rand_half(rng, shape):
    return rng.integers(-8, 9, size=shape).astype(np.float16) / np.float16(4)


def test_gemm_half(lib, tmp_path, path):
    rng = np.random.default_rng(1)
    M, N, K = 32, 48, 64
    A, B = rand_half(rng, (M, K)), rand_half(rng, (K, N))
    k = m2v.compile_library(lib_path(tmp_path), entries=["gemm_half"])["gemm_half"]
    got = run(k, [A, B], (M, N), (N // 16, M // 16, 1), scalars=[(3, np.array([M, N, K], np.uint32).tobytes())])
    np.testing.assert_array_equal(got, A.astype(np.float64) @ B.astype(np.float64))
    assert k.simdgroup_matrix_path == ("cooperative_matrix" if path == "cooperative" else "shuffle")


def bfloat_bits(x):
    """float32 values exact in bfloat, as bfloat bit patterns"""
    return (np.asarray(x, np.float32).view(np.uint32) >> 16).astype(np.uint16)


def test_tile_b(tmp_path, path):
    rng = np.random.default_rng(6)
    A, B = rand_half(rng, (8, 8)), rand_half(rng, (8, 8))
    k = m2v.compile_library(lib_path(tmp_path), entries=["tile_b"])["tile_b"]
    got = run(k, [A, B], (8, 8), (1, 1, 1))
    np.testing.assert_array_equal(got, A.astype(np.float64) @ B.astype(np.float64))


def test_gemm_bfloat(tmp_path, path):
    rng = np.random.default_rng(4)
    M, N, K = 32, 32, 64
    A, B = rand_half(rng, (M, K)).astype(np.float32), rand_half(rng, (K, N)).astype(np.float32)
    k = m2v.compile_library(lib_path(tmp_path), entries=["gemm_bfloat"])["gemm_bfloat"]
    got = run(k, [bfloat_bits(A), bfloat_bits(B)], (M, N), (N // 16, M // 16, 1),
              scalars=[(3, np.array([M, N, K], np.uint32).tobytes())])
    np.testing.assert_array_equal(got, A.astype(np.float64) @ B.astype(np.float64))
    assert k.simdgroup_matrix_path == ("cooperative_matrix" if path == "cooperative" else "shuffle")


def test_one_bfloat_multiply(tmp_path, path):
    rng = np.random.default_rng(5)
    A, Bt = rand_half(rng, (8, 8)).astype(np.float32), rand_half(rng, (8, 8)).astype(np.float32)
    k = m2v.compile_library(lib_path(tmp_path), entries=["one_bfloat"])["one_bfloat"]
    got = run(k, [bfloat_bits(A), bfloat_bits(Bt)], (8, 8), (1, 1, 1))
    np.testing.assert_array_equal(got, A.astype(np.float64) @ Bt.astype(np.float64).T)


def test_elements_through_threadgroup_memory(tmp_path, path):
    rng = np.random.default_rng(2)
    A, Bt = rand_half(rng, (8, 16)), rand_half(rng, (8, 16))
    k = m2v.compile_library(lib_path(tmp_path), entries=["elements_tg"])["elements_tg"]
    got = run(k, [A, Bt], (8, 8), (1, 1, 1))
    a, b = A.astype(np.float64), Bt.astype(np.float64).T
    want = ((a[:, :8] @ b[:8]) * 0.5 + a[:, 8:] @ b[8:]) * 0.5
    np.testing.assert_array_equal(got, want)


def test_float_operands_stay_on_shuffles(tmp_path, path):
    rng = np.random.default_rng(3)
    A, B = rng.standard_normal((8, 8)).astype(np.float32), rng.standard_normal((8, 8)).astype(np.float32)
    k = m2v.compile_library(lib_path(tmp_path), entries=["gemm_float"])["gemm_float"]
    got = run(k, [A, B], (8, 8), (1, 1, 1))
    np.testing.assert_allclose(got, A.astype(np.float64) @ B.astype(np.float64), rtol=1e-5, atol=1e-5)
    assert k.simdgroup_matrix_path == ""


def lib_path(tmp_path):
    # each test compiles its own Library: the path is chosen when a kernel is first loaded on the device
    p = tmp_path / "sgm.metal"
    p.write_text(SOURCE)
    return str(p)
