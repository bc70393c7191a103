"""A hand-written CUDA gemv with the structure of MLX's gemv kernel (gemv.metal, the non-transposed route MLX takes
for y = W x with W row-major), as the reference for what MLX's tile choice can reach on an NVIDIA GPU
(bench/mlx_vs_torch.py runs it beside MLX's kernel through metal2vk and PyTorch).

Same as `gemv_<T>_bm<BM>_bn1_sm1_sn32_tm<TM>_tn<TN>`: a block of BM warps; warp w of block b owns rows
(b * BM + w) * TM .. + TM; lane l reads TN adjacent elements of x and of each of its TM rows at k = l * TN, stepping
by 32 * TN (one 8-byte load per row per step for TN = 4 16-bit elements), accumulates in float, then the warp sums its
lanes (shuffles) and lane 0 writes the TM results. Grid: N / (BM * TM) blocks, as MLX dispatches it. Differences,
both in the reference's favour or neutral: y is written as float32, and N, K must be multiples of the tile.
"""
import re

_SOURCE = r"""
#include <cuda_fp16.h>
#include <cuda_bf16.h>

__device__ inline float to_float(__half v) { return __half2float(v); }
__device__ inline float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }

struct alignas(2 * TN) Chunk { T v[TN]; };

extern "C" __global__ void __launch_bounds__(32 * BM)
tile_gemv(const T* __restrict__ W, const T* __restrict__ x, float* __restrict__ y, int N, int K) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int row0 = (blockIdx.x * BM + warp) * TM;
  float acc[TM];
#pragma unroll
  for (int t = 0; t < TM; ++t) acc[t] = 0.0f;
  for (int k = lane * TN; k < K; k += 32 * TN) {
    Chunk xc = *reinterpret_cast<const Chunk*>(&x[k]);
#pragma unroll
    for (int t = 0; t < TM; ++t) {
      Chunk wc = *reinterpret_cast<const Chunk*>(&W[size_t(row0 + t) * K + k]);
#pragma unroll
      for (int j = 0; j < TN; ++j) acc[t] += to_float(wc.v[j]) * to_float(xc.v[j]);
    }
  }
#pragma unroll
  for (int t = 0; t < TM; ++t) {
    float s = acc[t];
#pragma unroll
    for (int o = 16; o > 0; o /= 2) s += __shfl_xor_sync(0xffffffffu, s, o);
    if (lane == 0) y[row0 + t] = s;
  }
}
"""

_CTYPE = {"f16": "__half", "bf16": "__nv_bfloat16"}


def mlx_gemv_tile(kernel_name):
    """(bm, tm, tn) of an MLX gemv instantiation name, or None when it splits K over simdgroups (bn, sm > 1)."""
    p = dict(re.findall(r"_(bm|bn|sm|sn|tm|tn)(\d+)", kernel_name))
    if not kernel_name.startswith("gemv_") or kernel_name.startswith("gemv_t") or p.get("bn") != "1" or \
            p.get("sm") != "1" or p.get("sn") != "32":
        return None
    return int(p["bm"]), int(p["tm"]), int(p["tn"])


def tile_gemv(dt, tile):
    """A function (W, x) -> float32 W @ x on torch CUDA tensors (W n x k, x k x 1), with MLX's tile (bm, tm, tn).
    Compiled when made; the CuPy views and the output are made once per set of inputs (cuda_same_shape._prepared), so
    that a repetition is one launch and the host does not bound the timing."""
    import cupy
    import torch

    from cuda_same_shape import _kernel, _prepared, _raw

    bm, tm, tn = tile
    kernel = _kernel(_SOURCE, "tile_gemv", [f"T={_CTYPE[dt]}", f"BM={bm}", f"TM={tm}", f"TN={tn}"])

    def prepare(w, x):
        n, k = w.shape
        if n % (bm * tm) or k % (32 * tn):
            raise ValueError(f"{n}x{k} is not a multiple of the tile {tile}")
        y = torch.empty((n, 1), dtype=torch.float32, device=w.device)
        args = (_raw(w), _raw(x), cupy.asarray(y), cupy.int32(n), cupy.int32(k))
        return (lambda: kernel((n // (bm * tm),), (32 * bm,), args)), y

    return _prepared(prepare)
