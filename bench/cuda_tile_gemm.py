"""A hand-written CUDA GEMM with the structure of MLX's steel GEMM loop, as the reference for what one tile shape can
reach on an NVIDIA GPU (bench/mlx_vs_torch.py runs it beside MLX's kernel through metal2vk and cuBLAS).

Same as `steel_gemm_fused` for row-major A (M x K), B (K x N), float accumulation: a threadgroup of WM x WN
simdgroups computes a BM x BN tile of C; each K step of BK copies the A and B tiles into shared memory (rows padded
by 16 bytes, 16-byte copies), synchronises, multiplies, and synchronises again; no double buffering. Each warp keeps
its (BM / WM) x (BN / WN) accumulators in registers (WMMA 16x16x16 fragments, loaded from shared memory with the
hardware's matrix loads). Differences, both in the reference's favour or neutral: C is written as float32
(float accumulators stored directly), and M, N, K must be multiples of the tile.
"""
import os

_SOURCE = r"""
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <mma.h>
using namespace nvcuda;

extern "C" __global__ void __launch_bounds__(32 * WM * WN)
tile_gemm(const T* __restrict__ A, const T* __restrict__ B, float* __restrict__ C, int M, int N, int K) {
  constexpr int THREADS = 32 * WM * WN, LDA = BK + 8, LDB = BN + 8;
  constexpr int WTM = BM / WM, WTN = BN / WN, FM = WTM / 16, FN = WTN / 16;
  __shared__ __align__(128) T As[BM * LDA];
  __shared__ __align__(128) T Bs[BK * LDB];
  const int tid = threadIdx.x, warp = tid / 32, wm = warp / WN, wn = warp % WN;
  const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[FM][FN];
#pragma unroll
  for (int i = 0; i < FM; ++i)
#pragma unroll
    for (int j = 0; j < FN; ++j) wmma::fill_fragment(acc[i][j], 0.0f);
  for (int k0 = 0; k0 < K; k0 += BK) {
    __syncthreads();
#pragma unroll
    for (int v = tid; v < BM * BK / 8; v += THREADS) {
      int r = v / (BK / 8), c = v % (BK / 8) * 8;
      *reinterpret_cast<uint4*>(&As[r * LDA + c]) =
          *reinterpret_cast<const uint4*>(&A[size_t(row0 + r) * K + k0 + c]);
    }
#pragma unroll
    for (int v = tid; v < BK * BN / 8; v += THREADS) {
      int r = v / (BN / 8), c = v % (BN / 8) * 8;
      *reinterpret_cast<uint4*>(&Bs[r * LDB + c]) =
          *reinterpret_cast<const uint4*>(&B[size_t(k0 + r) * N + col0 + c]);
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < BK; kk += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> a[FM];
      wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> b[FN];
#pragma unroll
      for (int i = 0; i < FM; ++i) wmma::load_matrix_sync(a[i], &As[(wm * WTM + i * 16) * LDA + kk], LDA);
#pragma unroll
      for (int j = 0; j < FN; ++j) wmma::load_matrix_sync(b[j], &Bs[kk * LDB + wn * WTN + j * 16], LDB);
#pragma unroll
      for (int i = 0; i < FM; ++i)
#pragma unroll
        for (int j = 0; j < FN; ++j) wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
    }
  }
#pragma unroll
  for (int i = 0; i < FM; ++i)
#pragma unroll
    for (int j = 0; j < FN; ++j)
      wmma::store_matrix_sync(&C[size_t(row0 + wm * WTM + i * 16) * N + col0 + wn * WTN + j * 16], acc[i][j], N,
                              wmma::mem_row_major);
}
"""

_CTYPE = {"f16": "__half", "bf16": "__nv_bfloat16"}


def tile_gemm(dt, tile):
    """A function (a, b) -> float32 a @ b on torch CUDA tensors, with the steel tile (bm, bn, bk, wm, wn)."""
    import cupy
    import torch

    bm, bn, bk, wm, wn = tile
    if bk % 16 or (bm // wm) % 16 or (bn // wn) % 16:
        raise ValueError(f"tile {tile} does not split into 16x16x16 fragments")
    include = [f"-I{p}" for p in (os.path.join(cupy.cuda.get_cuda_path() or "", "include"), "/usr/local/cuda/include")
               if os.path.isdir(p)]
    defines = [f"-DT={_CTYPE[dt]}", f"-DBM={bm}", f"-DBN={bn}", f"-DBK={bk}", f"-DWM={wm}", f"-DWN={wn}"]
    kernel = cupy.RawKernel(_SOURCE, "tile_gemm", options=("--std=c++17", *include, *defines))

    def run(a, b):
        M, K = a.shape
        N = b.shape[1]
        if M % bm or N % bn or K % bk:
            raise ValueError(f"{M}x{N}x{K} is not a multiple of the tile {tile}")
        c = torch.empty((M, N), dtype=torch.float32, device=a.device)
        bits = [cupy.asarray(x.view(torch.int16)) for x in (a, b)]  # CuPy has no bfloat16; the kernel reads T
        kernel((N // bn, M // bm), (32 * wm * wn,), (*bits, cupy.asarray(c), cupy.int32(M), cupy.int32(N),
                                                     cupy.int32(K)))
        return c

    return run
