"""A hand-written CUDA GEMM with the algorithm of MLX's NAX GEMM (steel_gemm_fused_nax.h's `gemm` with gemm_nax.h's
`gemm_loop` and nax.h's tiles), as the reference for what that algorithm can reach on an NVIDIA GPU
(bench/mlx_vs_torch.py runs it beside MLX's kernel through metal2vk and cuBLAS).

Same as `steel_gemm_fused_nax_nn_<T>_<T>_bm<BM>_bn<BN>_bk<BK>_wm<WM>_wn<WN>` for row-major A (M x K), B (K x N),
M, N, K multiples of the tile (MLX's align_M/N/K function constants all true), no batch, no C source:
- grid (tiles_n << swizzle_log, ceil(tiles_m / 2^swizzle_log)) of WM x WN warps, as MLX's host code dispatches it;
  block (x, y) computes the BM x BN tile at row tile (y << swizzle_log) + (x & (2^swizzle_log - 1)) and column tile
  x >> swizzle_log (MLX's swizzle), blocks past the tile grid returning at once;
- warp w owns the SM x SN = (BM / WM) x (BN / WN) sub-tile of C at rows SM * (w / WN), columns SN * (w % WN), held in
  registers as (SM / 16) x (SN / 16) float accumulator fragments of 16x16 (NAXTile<float, TM, TN>);
- K is walked in K / BK blocks, a threadgroup barrier at the start of each (MLX's threadgroup_barrier(mem_none)),
  and inside a block in steps of SK = 32 (not unrolled, as MLX's STEEL_PRAGMA_NO_UNROLL): the warp loads its
  (SM / 16) x 2 fragments of A and 2 x (SN / 16) fragments of B, 16x16 each, STRAIGHT FROM GLOBAL MEMORY (no
  shared-memory staging), then multiplies them into its accumulators (16x16x16 tensor-core products; MLX issues the
  same products as 16x32x16 matmul2d pairs);
- the float accumulators are rounded to T and written to D.
Tensor cores through nvcuda::wmma (mma.h), 16x16x16 half/bfloat16 -> float. Differences: the store of each 16x16
result goes through a 1 KiB per-warp shared-memory buffer (WMMA does not expose which element each lane holds;
MLX's store writes its registers directly: the epilogue, neutral against the K loop), and NVIDIA's fragment layout
makes a lane read B as pairs along K where Apple's reads 4 adjacent elements along a row (the hardware's layout).

`mma="ptx"` runs the same algorithm with the instruction itself (mma.sync m16n8k16, PTX's documented fragment
layouts): each operand register is one 32-bit load from global memory (B's row pairs moved into the K-pair layout by
movmatrix, an 8x8 register transpose) and the results are rounded and stored from registers, no shared memory at
all. The bench uses the WMMA form; `python3 bench/cuda_nax_gemm.py` times both against cuBLAS.
"""
from cuda_same_shape import _kernel, _prepared, _raw, _time

_SOURCE = r"""
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <mma.h>
using namespace nvcuda;

extern "C" __global__ void __launch_bounds__(32 * WM * WN)
nax_gemm(const T* __restrict__ A, const T* __restrict__ B, T* __restrict__ D, int M, int N, int K, int tiles_m,
         int tiles_n) {
  constexpr int SM = BM / WM, SN = BN / WN, SK = 32;
  constexpr int TM = SM / 16, TN = SN / 16, TK = SK / 16;
  __shared__ __align__(32) float stage[WM * WN][16 * 16];

  // MLX's threadgroup swizzle
  const int tid_y = (int(blockIdx.y) << SWIZZLE_LOG) + (int(blockIdx.x) & ((1 << SWIZZLE_LOG) - 1));
  const int tid_x = int(blockIdx.x) >> SWIZZLE_LOG;
  if (tiles_n <= tid_x || tiles_m <= tid_y) return;

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int tm = SM * (warp / WN), tn = SN * (warp % WN);
  const int lda = K, ldb = N, ldd = N;
  const T* a = A + (size_t(tid_y) * BM + tm) * lda;
  const T* b = B + size_t(tid_x) * BN + tn;
  T* d = D + (size_t(tid_y) * BM + tm) * ldd + size_t(tid_x) * BN + tn;

  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) wmma::fill_fragment(acc[i][j], 0.0f);

  const int k_iterations = K / BK;  // gemm_k_iterations_aligned
#pragma unroll 1
  for (int kk0 = 0; kk0 < k_iterations; ++kk0) {
    __syncthreads();  // threadgroup_barrier(mem_flags::mem_none)
#pragma unroll 1
    for (int kk1 = 0; kk1 < BK; kk1 += SK) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> af[TM][TK];
      wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> bf[TK][TN];
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int k = 0; k < TK; ++k) wmma::load_matrix_sync(af[i][k], a + size_t(i * 16) * lda + kk1 + k * 16, lda);
#pragma unroll
      for (int k = 0; k < TK; ++k)
#pragma unroll
        for (int j = 0; j < TN; ++j) wmma::load_matrix_sync(bf[k][j], b + size_t(kk1 + k * 16) * ldb + j * 16, ldb);
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j)
#pragma unroll
          for (int k = 0; k < TK; ++k) wmma::mma_sync(acc[i][j], af[i][k], bf[k][j], acc[i][j]);
    }
    a += BK;
    b += size_t(BK) * ldb;
  }

  // Dtile.store: each 16x16 accumulator rounded to T; lane l writes row l / 2, columns (l % 2) * 8 .. + 7
  float* st = stage[warp];
  const int r = lane / 2, c = (lane % 2) * 8;
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) {
      wmma::store_matrix_sync(st, acc[i][j], 16, wmma::mem_row_major);
      __syncwarp();
      union { uint4 u; T h[8]; } out;
#pragma unroll
      for (int e = 0; e < 8; ++e) out.h[e] = T(st[r * 16 + c + e]);
      *reinterpret_cast<uint4*>(d + size_t(i * 16 + r) * ldd + j * 16 + c) = out.u;
      __syncwarp();
    }
}

#ifdef MMA_BF16
#define MMA_PTX "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
__device__ inline unsigned pack2(float x, float y) {
  __nv_bfloat162 v = __floats2bfloat162_rn(x, y);
  return *reinterpret_cast<unsigned*>(&v);
}
#else
#define MMA_PTX "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
__device__ inline unsigned pack2(float x, float y) {
  __half2 v = __floats2half2_rn(x, y);
  return *reinterpret_cast<unsigned*>(&v);
}
#endif

// The 8x8 transpose of a 16-bit matrix held one row pair per lane (row lane / 4, columns 2 (lane % 4) + {0, 1}).
__device__ inline unsigned transpose8x8(unsigned v) {
  unsigned r;
  asm volatile("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;" : "=r"(r) : "r"(v));
  return r;
}

// The same algorithm with the tensor-core instruction itself (PTX mma.sync m16n8k16, its documented fragment layouts)
// instead of WMMA: every operand register is one 32-bit load from global memory (A: 2 adjacent elements of a row;
// B: 2 adjacent elements of a row, moved into the K-pair layout the instruction wants by an 8x8 register transpose),
// and the accumulators are rounded and stored straight from registers, as MLX's Dtile.store does.
extern "C" __global__ void __launch_bounds__(32 * WM * WN)
nax_gemm_mma(const T* __restrict__ A, const T* __restrict__ B, T* __restrict__ D, int M, int N, int K, int tiles_m,
             int tiles_n) {
  constexpr int SM = BM / WM, SN = BN / WN, SK = 32;
  constexpr int TM = SM / 16, TN8 = SN / 8, TK = SK / 16;

  const int tid_y = (int(blockIdx.y) << SWIZZLE_LOG) + (int(blockIdx.x) & ((1 << SWIZZLE_LOG) - 1));
  const int tid_x = int(blockIdx.x) >> SWIZZLE_LOG;
  if (tiles_n <= tid_x || tiles_m <= tid_y) return;

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, t = lane % 4;
  const int tm = SM * (warp / WN), tn = SN * (warp % WN);
  const int lda = K, ldb = N, ldd = N;
  const T* a = A + (size_t(tid_y) * BM + tm + g) * lda + 2 * t;    // this lane's row g, columns 2t, 2t + 1
  const T* b = B + size_t(g) * ldb + size_t(tid_x) * BN + tn + 2 * t;
  T* d = D + (size_t(tid_y) * BM + tm + g) * ldd + size_t(tid_x) * BN + tn + 2 * t;

  float acc[TM][TN8][4];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN8; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;

  const int k_iterations = K / BK;
#pragma unroll 1
  for (int kk0 = 0; kk0 < k_iterations; ++kk0) {
    __syncthreads();
#pragma unroll 1
    for (int kk1 = 0; kk1 < BK; kk1 += SK) {
      unsigned af[TM][TK][4], bf[TK][TN8][2];
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int k = 0; k < TK; ++k) {
          const T* p = a + size_t(i * 16) * lda + kk1 + k * 16;
          af[i][k][0] = *reinterpret_cast<const unsigned*>(p);                         // row g, k 2t..
          af[i][k][1] = *reinterpret_cast<const unsigned*>(p + size_t(8) * lda);       // row g + 8
          af[i][k][2] = *reinterpret_cast<const unsigned*>(p + 8);                     // row g, k 2t + 8..
          af[i][k][3] = *reinterpret_cast<const unsigned*>(p + size_t(8) * lda + 8);   // row g + 8, k 2t + 8..
        }
#pragma unroll
      for (int k = 0; k < TK; ++k)
#pragma unroll
        for (int j = 0; j < TN8; ++j) {
          const T* p = b + size_t(kk1 + k * 16) * ldb + j * 8;
          bf[k][j][0] = transpose8x8(*reinterpret_cast<const unsigned*>(p));                      // k 0..7
          bf[k][j][1] = transpose8x8(*reinterpret_cast<const unsigned*>(p + size_t(8) * ldb));    // k 8..15
        }
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN8; ++j)
#pragma unroll
          for (int k = 0; k < TK; ++k)
            asm volatile(MMA_PTX "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
                         : "+f"(acc[i][j][0]), "+f"(acc[i][j][1]), "+f"(acc[i][j][2]), "+f"(acc[i][j][3])
                         : "r"(af[i][k][0]), "r"(af[i][k][1]), "r"(af[i][k][2]), "r"(af[i][k][3]),
                           "r"(bf[k][j][0]), "r"(bf[k][j][1]));
    }
    a += BK;
    b += size_t(BK) * ldb;
  }

  // accumulator (row g, columns 2t, 2t + 1) in [0], [1]; row g + 8 in [2], [3]
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN8; ++j) {
      *reinterpret_cast<unsigned*>(d + size_t(i * 16) * ldd + j * 8) = pack2(acc[i][j][0], acc[i][j][1]);
      *reinterpret_cast<unsigned*>(d + size_t(i * 16 + 8) * ldd + j * 8) = pack2(acc[i][j][2], acc[i][j][3]);
    }
}
"""

_CTYPE = {"f16": "__half", "bf16": "__nv_bfloat16"}


def nax_gemm(dt, tile, swizzle_log, mma="wmma"):
    """A function (a, b) -> a @ b (torch CUDA tensors of dtype dt, row-major) with MLX's NAX GEMM algorithm for the
    tile (bm, bn, bk, wm, wn) and threadgroup swizzle MLX's host code picks. mma: "wmma" (nvcuda::wmma fragments) or
    "ptx" (mma.sync m16n8k16 with 32-bit operand loads and register stores)."""
    import cupy
    import torch

    bm, bn, bk, wm, wn = tile
    if bk % 32 or (bm // wm) % 16 or (bn // wn) % 16 or bm % wm or bn % wn:
        raise ValueError(f"tile {tile} does not split into 16x16 fragments and 32-wide K steps")
    defines = [f"T={_CTYPE[dt]}", f"BM={bm}", f"BN={bn}", f"BK={bk}", f"WM={wm}", f"WN={wn}",
               f"SWIZZLE_LOG={swizzle_log}"] + (["MMA_BF16"] if dt == "bf16" else [])
    kernel = _kernel(_SOURCE, {"wmma": "nax_gemm", "ptx": "nax_gemm_mma"}[mma], defines)

    def prepare(a, b):
        M, K = a.shape
        N = b.shape[1]
        if M % bm or N % bn or K % bk or b.shape[0] != K:
            raise ValueError(f"{M}x{N}x{K} is not a multiple of the tile {tile}")
        tiles_m, tiles_n = M // bm, N // bn
        tile_sz = 1 << swizzle_log
        grid = (tiles_n * tile_sz, -(-tiles_m // tile_sz))
        d = torch.empty((M, N), dtype=a.dtype, device=a.device)
        args = (_raw(a), _raw(b), _raw(d), cupy.int32(M), cupy.int32(N), cupy.int32(K), cupy.int32(tiles_m),
                cupy.int32(tiles_n))
        return (lambda: kernel(grid, (32 * wm * wn,), args)), d

    return _prepared(prepare)


def main():
    """The reference alone against torch.matmul (cuBLAS), timed and checked: python3 bench/cuda_nax_gemm.py. The
    tiles and swizzles are cases/nax.py's for 4096^3 and 8192^3 (bench/mlx_vs_torch.py takes them from there)."""
    import torch

    tiles = {"d": ((64, 128, 256, 2, 4), 2), "g": ((128, 128, 512, 4, 4), 1)}
    torch.manual_seed(0)
    for dt, tdt in (("f16", torch.float16), ("bf16", torch.bfloat16)):
        for n in (4096, 8192):
            a = torch.rand((n, n), device="cuda").sub_(0.5).to(tdt)
            b = torch.rand((n, n), device="cuda").sub_(0.5).to(tdt)
            want = torch.matmul(a.double(), b.double())
            runs = [("cuBLAS", torch.matmul)] + [(f"same-algorithm CUDA ({mma}), device class '{devc}' {tile}",
                                                  nax_gemm(dt, tile, swz, mma))
                                                 for devc, (tile, swz) in tiles.items() for mma in ("wmma", "ptx")]
            for name, fn in runs:
                err = float(((fn(a, b).double() - want).abs() / want.abs().clamp(min=1)).max())
                us = _time(fn, (a, b))
                print(f"{dt} {n}^3 {name}: {us:.1f} us, {2 * n ** 3 / us / 1e6:.1f} TFLOP/s, max rel diff {err:.1g}",
                      flush=True)


if __name__ == "__main__":
    main()
