"""A hand-written CUDA kernel with the shape of MLX's quantized matrix-vector product `affine_qmv_fast_<T>_gs_<G>_b_<B>
_batch_0` (quantized.h `qmv_fast_impl`, the route QuantizedMatmul::eval_gpu takes for y = x W^T with W (N, K)
affine-quantized, x a few rows, N % 8 == 0 and K a multiple of the 32-lane block), as the reference for what MLX's
algorithm can reach on an NVIDIA GPU (bench/mlx_vs_torch.py runs it beside MLX's kernel through metal2vk and PyTorch).

The same as MLX's kernel, for 4-bit (and 8-bit) weights and any group size that is a multiple of the values a lane
takes (64 in the bench):
- Threadgroup (32, 2, 1): two warps; warp s of block (m, b) owns output rows r0 = b * 8 + s * 4 .. r0 + 3
  (results_per_simdgroup = 4). Grid (M, N / 8, 1): as quantized.cpp dispatches qmv_fast (bn = 8, bk = 32).
- Lane l takes values_per_thread = 2 packs of 32 / bits values (16 for 4-bit, 8 for 8-bit) of x at
  l * values_per_thread, stepping by block_size = 32 * values_per_thread (512 / 256) along K, and the same K range
  of each of its 4 rows: 8 bytes of packed weights per row per step, read as MLX's qdot reads them (four uint16 words
  of four nibbles for 4-bit, eight bytes for 8-bit), and one scale and one bias per row per step (element
  l / (group / values_per_thread) of the step's groups: 4 lanes share a group of 64 for 4-bit).
- load_vector: x pre-scaled as MLX does for 4-bit (x[i], x[i+1] / 16, x[i+2] / 256, x[i+3] / 4096, so each nibble is
  multiplied masked but unshifted), and the sum of x for the bias term, each four-element partial sum added in T (its
  rounding to T after every addition, as `x[i] + x[i+1] + x[i+2] + x[i+3]` of T values rounds) into a float sum.
- qdot: accum += x0 * (w & 0xf) + x1 * (w & 0xf0) + x2 * (w & 0xf00) + x3 * (w & 0xf000) per uint16 word in float,
  then scale * accum + sum * bias; the step's results accumulated per row in float.
- The warp sums each row (shuffles, as simd_sum), lane 0 writes the 4 results rounded to T.

The weights, scales and biases are the bench's buffers: W packed by cases/_quantized_util.pack_rows (each row an
LSB-first bit stream of uint32 words, value i at bits [i * bits, (i + 1) * bits)), scales and biases (N, K / group)
in T. Differences, in the reference's favour or neutral: by default x and the weights are read with explicit vector
loads (x: 16-byte loads of the lane's 16 or 8 values; weights: one 8-byte load per row per step, split into MLX's
uint16 words in registers), where MLX's source reads element by element and leaves any merging to its compiler;
`vector_loads=False` reads them element by element as written. The warp sum's order of additions is the butterfly's
(simd_sum's is unspecified), and the compiler may fuse a multiply and an add.
"""
import os
import re

from cuda_same_shape import _ELEM, _ELEMENT_TYPES, _kernel, _prepared, _raw, _time

_SOURCE = _ELEMENT_TYPES + r"""
// One addition of two T values in T: the float sum rounded to T (exact for half and bfloat16: float has more than
// twice their precision plus two bits, so the double rounding never differs).
__device__ inline float add_t(float a, float b) { return to_f(from_f(a + b)); }

#define SIMD_SIZE 32
constexpr int packs_per_thread = 2;  // bits != 2
constexpr int num_simdgroups = 2;
constexpr int results_per_simdgroup = 4;
constexpr int pack_factor = 32 / BITS;  // get_pack_factor<bits, 32> for 4 and 8 bits
constexpr int bytes_per_pack = 4;       // get_bytes_per_pack<bits, 32>
constexpr int values_per_thread = pack_factor * packs_per_thread;
constexpr int block_size = values_per_thread * SIMD_SIZE;
constexpr int scale_step_per_thread = GROUP_SIZE / values_per_thread;
static_assert(BITS == 4 || BITS == 8, "4-bit and 8-bit weights");
static_assert(GROUP_SIZE % values_per_thread == 0 && block_size % GROUP_SIZE == 0, "whole groups per lane and step");

constexpr int x_bytes = values_per_thread * int(sizeof(S));  // a lane's x per step: 32 bytes (16-bit, 4-bit weights)
union XVec { uint4 u[x_bytes / 16]; S s[values_per_thread]; };
union WVec { uint2 u; unsigned short h[4]; unsigned char b[8]; };  // a lane's 8 bytes of one row per step

// load_vector<T, float, values_per_thread, bits>: x_thread as the dot product wants it, and the sum of x.
__device__ inline float load_vector(const S* __restrict__ x, float* x_thread) {
  S xs[values_per_thread];
#if VECTOR_LOADS
  XVec v;
#pragma unroll
  for (int i = 0; i < x_bytes / 16; i++) v.u[i] = reinterpret_cast<const uint4*>(x)[i];
#pragma unroll
  for (int i = 0; i < values_per_thread; i++) xs[i] = v.s[i];
#else
#pragma unroll
  for (int i = 0; i < values_per_thread; i++) xs[i] = x[i];
#endif
  float sum = 0;
#if BITS == 4
#pragma unroll
  for (int i = 0; i < values_per_thread; i += 4) {
    const float x0 = to_f(xs[i]), x1 = to_f(xs[i + 1]), x2 = to_f(xs[i + 2]), x3 = to_f(xs[i + 3]);
    sum += add_t(add_t(add_t(x0, x1), x2), x3);
    x_thread[i] = x0;
    x_thread[i + 1] = x1 / 16.0f;
    x_thread[i + 2] = x2 / 256.0f;
    x_thread[i + 3] = x3 / 4096.0f;
  }
#else
#pragma unroll
  for (int i = 0; i < values_per_thread; i++) {
    sum += to_f(xs[i]);
    x_thread[i] = to_f(xs[i]);
  }
#endif
  return sum;
}

// qdot<float, values_per_thread, bits>: one row's 8 bytes against x_thread.
__device__ inline float qdot(const unsigned char* __restrict__ w, const float* x_thread, float scale, float bias,
                             float sum) {
  WVec wv;
#if VECTOR_LOADS
  wv.u = *reinterpret_cast<const uint2*>(w);
#elif BITS == 4
  const unsigned short* ws = reinterpret_cast<const unsigned short*>(w);
#pragma unroll
  for (int i = 0; i < 4; i++) wv.h[i] = ws[i];
#else
#pragma unroll
  for (int i = 0; i < 8; i++) wv.b[i] = w[i];
#endif
  float accum = 0;
#if BITS == 4
#pragma unroll
  for (int i = 0; i < values_per_thread / 4; i++) {
    const int ws = wv.h[i];
    accum += (x_thread[4 * i] * float(ws & 0x000f) + x_thread[4 * i + 1] * float(ws & 0x00f0) +
              x_thread[4 * i + 2] * float(ws & 0x0f00) + x_thread[4 * i + 3] * float(ws & 0xf000));
  }
#else
#pragma unroll
  for (int i = 0; i < values_per_thread; i++) accum += x_thread[i] * float(wv.b[i]);
#endif
  return scale * accum + sum * bias;
}

__device__ inline float simd_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

extern "C" __global__ void __launch_bounds__(SIMD_SIZE * num_simdgroups)
qmv_fast(const unsigned* __restrict__ w, const S* __restrict__ scales, const S* __restrict__ biases,
         const S* __restrict__ x, S* __restrict__ y, int in_vec_size, int out_vec_size) {
  // threadgroup (32, 2, 1): thread_index_in_simdgroup, simdgroup_index_in_threadgroup; grid (M, N / 8, 1)
  const int simd_lid = threadIdx.x, simd_gid = threadIdx.y;
  const unsigned char* __restrict__ ws = reinterpret_cast<const unsigned char*>(w);
  float x_thread[values_per_thread];
  float result[results_per_simdgroup] = {0};

  const int in_vec_size_w = in_vec_size * bytes_per_pack / pack_factor;
  const int in_vec_size_g = in_vec_size / GROUP_SIZE;
  const int out_row = blockIdx.y * (num_simdgroups * results_per_simdgroup) + simd_gid * results_per_simdgroup;

  ws += out_row * in_vec_size_w + simd_lid * packs_per_thread * bytes_per_pack;
  scales += out_row * in_vec_size_g + simd_lid / scale_step_per_thread;
  biases += out_row * in_vec_size_g + simd_lid / scale_step_per_thread;
  x += blockIdx.x * in_vec_size + simd_lid * values_per_thread;
  y += blockIdx.x * out_vec_size + out_row;

  for (int k = 0; k < in_vec_size; k += block_size) {
    const float sum = load_vector(x, x_thread);
#pragma unroll
    for (int row = 0; row < results_per_simdgroup; row++) {
      const unsigned char* wl = ws + row * in_vec_size_w;
      const float s = to_f(scales[row * in_vec_size_g]);
      const float b = to_f(biases[row * in_vec_size_g]);
      result[row] += qdot(wl, x_thread, s, b, sum);
    }
    ws += block_size * bytes_per_pack / pack_factor;
    scales += block_size / GROUP_SIZE;
    biases += block_size / GROUP_SIZE;
    x += block_size;
  }

#pragma unroll
  for (int row = 0; row < results_per_simdgroup; row++) {
    result[row] = simd_sum(result[row]);
    if (simd_lid == 0) y[row] = from_f(result[row]);
  }
}
"""

RESULTS_PER_TG = 8  # num_simdgroups * results_per_simdgroup: quantized.cpp's bn for qmv_fast
THREADGROUP = (32, 2, 1)


def block_size(bits):
    """The K step of qmv_fast_impl: 32 lanes of 2 packs of 32 / bits values (quantized.cpp's qmv_fast_k_alignment)."""
    return 32 * 2 * (32 // bits)


def mlx_qmv_fast(kernel_name):
    """(dt, group size, bits) of an MLX `affine_qmv_fast_<T>_gs_<G>_b_<B>_batch_0` name this reference mirrors, or None
    (another route, batched, or bits other than 4 and 8)."""
    m = re.fullmatch(r"affine_qmv_fast_(float|float16_t|bfloat16_t)_gs_(\d+)_b_(\d+)_batch_0", kernel_name)
    if not m:
        return None
    dt = {"float": "f32", "float16_t": "f16", "bfloat16_t": "bf16"}[m.group(1)]
    gs, bits = int(m.group(2)), int(m.group(3))
    if bits not in (4, 8) or gs % (2 * 32 // bits) or block_size(bits) % gs:
        return None
    return dt, gs, bits


def qmv_fast(dt, gs=64, bits=4, vector_loads=True):
    """A function (x, w, scales, biases) -> x @ dequantize(w).T on torch CUDA tensors with the shape of MLX's
    `affine_qmv_fast_<T>_gs_<gs>_b_<bits>_batch_0`: x (M, K) in T, w (N, K * bits / 32) int32 (the packed uint32
    words), scales and biases (N, K / gs) in T; the result (M, N) in T."""
    import cupy
    import torch

    kernel = _kernel(_SOURCE, "qmv_fast", [f"ELEM={_ELEM[dt]}", f"BITS={bits}", f"GROUP_SIZE={gs}",
                                           f"VECTOR_LOADS={int(vector_loads)}"])

    def prepare(x, w, scales, biases):
        k = x.shape[-1]
        m = x.numel() // k
        n = w.shape[0]
        if n % RESULTS_PER_TG or k % block_size(bits):
            raise ValueError(f"qmv_fast takes N % {RESULTS_PER_TG} == 0 and K % {block_size(bits)} == 0, not "
                             f"N={n}, K={k}")
        if w.dtype != torch.int32 or tuple(w.shape) != (n, k * bits // 32):
            raise ValueError(f"w: the packed words, int32 ({n}, {k * bits // 32}), not {w.dtype} {tuple(w.shape)}")
        for t in (scales, biases):
            if tuple(t.shape) != (n, k // gs) or t.dtype != x.dtype:
                raise ValueError(f"scales and biases: ({n}, {k // gs}) of x's type, not {t.dtype} {tuple(t.shape)}")
        y = torch.empty((m, n), dtype=x.dtype, device=x.device)
        args = (_raw(w), _raw(scales), _raw(biases), _raw(x), _raw(y), cupy.int32(k), cupy.int32(n))
        grid = (m, n // RESULTS_PER_TG, 1)
        return (lambda: kernel(grid, THREADGROUP, args)), y

    return _prepared(prepare)


def _pack_rows():
    """cases/_quantized_util.pack_rows, the packing the bench's MLX launch uploads (loaded alone: the case folder's
    copy.py would shadow the standard library's copy on sys.path)."""
    import importlib.util

    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "corpus", "mlx-library", "cases",
                        "_quantized_util.py")
    spec = importlib.util.spec_from_file_location("_quantized_util", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.pack_rows


# The bench's qmv shapes (N, K): Llama-3.1-8B's up/gate, down and square projections, Qwen3-0.6B's.
SHAPES = [(14336, 4096), (4096, 14336), (4096, 4096), (1024, 1024), (3072, 1024), (1024, 3072)]


def main():
    """The reference alone at the bench's shapes, checked against x @ dequantize(w).T in float64 from the same codes,
    scales and biases (the bench's value ranges, packed by the bench's pack_rows), and timed beside the element-by-
    element form and PyTorch's dense gemv of the dequantized weights: python3 bench/cuda_tile_qmv.py.
    GB/s counts what the kernel must move (the bench's count: packed weights, scales, biases, x, y)."""
    import numpy as np
    import torch

    pack_rows = _pack_rows()
    tdt = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
    itemsize = {"f32": 4, "f16": 2, "bf16": 2}
    gs, bits, tol = 64, 4, 1e-2
    rng = np.random.default_rng(0)
    failed = 0
    for dt in ("f16", "bf16"):
        fast, literal = qmv_fast(dt, gs, bits), qmv_fast(dt, gs, bits, vector_loads=False)
        for n, k in SHAPES:
            codes = rng.integers(0, 1 << bits, (n, k))
            # scales and biases as stored in T (exact in float32, so the conversion to T below is exact too)
            scales = torch.tensor(rng.uniform(0.001, 0.02, (n, k // gs)), dtype=tdt[dt]).cuda()
            biases = torch.tensor(rng.uniform(-0.1, 0.1, (n, k // gs)), dtype=tdt[dt]).cuda()
            x = torch.tensor(rng.integers(-64, 65, (1, k)) / 64.0, dtype=tdt[dt]).cuda()
            wq = torch.from_numpy(pack_rows(codes, bits).view(np.int32)).cuda()
            w64 = (torch.from_numpy(codes).cuda().double() * scales.double().repeat_interleave(gs, dim=1)
                   + biases.double().repeat_interleave(gs, dim=1))
            want = x.double() @ w64.T
            wt = w64.to(tdt[dt])
            args = (x, wq, scales, biases)
            errs = []
            for fn in (fast, literal):
                got = fn(*args).double()
                errs.append(float(((got - want).abs() / want.abs().clamp(min=1)).max()))
            nbytes = n * k * bits // 8 + 2 * n * (k // gs) * itemsize[dt] + (k + n) * itemsize[dt]
            t_fast, t_lit = _time(fast, args), _time(literal, args)
            t_torch = _time(lambda a, b: torch.matmul(a, b.T), (x, wt))
            ok = max(errs) <= tol
            failed += not ok
            print(f"qmv {bits}-bit gs{gs} {dt} {n}x{k}: same-shape CUDA {t_fast:.1f} us ({nbytes / t_fast / 1e3:.0f} "
                  f"GB/s), element loads {t_lit:.1f} us ({nbytes / t_lit / 1e3:.0f} GB/s), PyTorch dense "
                  f"{t_torch:.1f} us; max rel diff vs float64 {errs[0]:.1g} / {errs[1]:.1g} "
                  f"{'ok' if ok else 'MISMATCH'}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
