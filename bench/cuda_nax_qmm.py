"""A hand-written CUDA kernel with the algorithm of MLX's NAX quantized matmul `affine_qmm_t_nax_<T>_gs_<G>_b_4_bm<BM>
_bn64_bk64_wm2_wn2_alN_true_batch_0` (quantized_nax.h's `qmm_t_nax_tgp_impl` with its `QuantizedBlockLoader` and
steel/gemm/nax.h's tiles), y = x @ dequantize(w).T for x (M, K) and w (N, K) affine-quantized to 4 bits along K, as the
reference for what that algorithm can reach on an NVIDIA GPU: if this kernel is slow, MLX's algorithm is; if it is
fast and MLX's kernel through metal2vk is not, the translation is.

The tile MLX's host code picks (quantized.cpp): QuantizedMatmul::eval_gpu sends M >= get_qmv_batch_limit (at most 33)
with transposed weights and one output matrix to qmm_splitk, which targets 512 threadgroups of 32x32 tiles:
split_k = max(1, 512 / (ceil(N / 32) * ceil(M / 32))) = 1 for M = 512, N = 14336 (7168 tiles), so it calls qmm(),
which takes qmm_nax on a NAX device when K % 64 == 0 and x is not float32 (or tf32 is on). qmm_nax: wm = wn = 2,
bm = (M <= 32) ? 32 : 64, bn = bk = 64; threadgroup (32, wn, wm) = 128 threads; grid (ceil(N / 64), ceil(M / 64), B);
`_alN_true` when N % 64 == 0. At M = 512, N = 14336, K = 4096: BM = BN = BK = 64, WM = WN = 2, grid (224, 8, 1).

The same as MLX's kernel, for M, N, K multiples of the tile (aligned_N, every simdgroup aligned in M), no batch, 4-bit
weights and a group size that is a multiple of BK (64 in the bench: one scale and one bias per row per K block):
- grid (N / BN, M / BM): block (x, y) computes the BM x BN tile of y at rows y * BM, columns x * BN (no swizzle);
  128 threads = WM x WN = 2 x 2 warps; warp w owns the SM x SN = 32 x 32 sub-tile at rows SM * (w / WN), columns
  SN * (w % WN), held in registers as TM x TN = 2 x 2 float accumulator fragments of 16x16 (NAXTile<float, 2, 2>).
- the weights: K is walked in blocks of BK = 64. Per block, one threadgroup buffer Ws of BN x (BK + 16 / sizeof(T))
  = 64 x 72 elements of T (the row padding MLX uses) is filled by all 128 threads, as QuantizedBlockLoader<T, BN, BK,
  BK_padded, 1, 128, group_size, 4> does: thread t takes row t / 2 of the tile, packed bytes (t % 2) * 16 .. + 15 of
  the block (n_reads = 16 bytes, 32 values), reads that row's scale and bias for the block (in T, converted to
  float), and writes T(s * (byte & 0x0f) + b) and T(s / 16 * (byte & 0xf0) + b) per byte, i.e. the weights are
  dequantized ONCE PER BLOCK INTO THREADGROUP MEMORY, rounded to T; then the scale and bias pointers step to the next
  group after group_size / BK blocks. A threadgroup barrier before the fill (the previous block's readers are done)
  and one after it (the tile is complete): a single buffer, two barriers per K block, no double buffering, no
  overlap of the next block's weight loads with this block's products.
- inside a K block, steps of SK = 32 (not unrolled, as MLX's STEEL_PRAGMA_NO_UNROLL): the warp loads its TM x TK =
  2 x 2 fragments of x STRAIGHT FROM GLOBAL MEMORY (NAXTile::load(x + kk1, K): no staging of x; each warp reads its
  own 32 rows, and the WN = 2 warps on the same rows both read them) and its TN x TK = 2 x 2 fragments of the
  dequantized weights from Ws (NAXTile::load<T, BK_padded, 1>: rows of the tile are N, columns K, so B is read
  transposed), then multiplies them into its accumulators in tile_matmad_nax's order (for mm, for nn in pairs, for
  kk; MLX issues them as 16x32x16 matmul2d ops with transposed B, here 16x16x16 products or m16n8k16 instructions).
- a threadgroup barrier, then the float accumulators are rounded to T and written to y.
Tensor cores through nvcuda::wmma (mma.h), 16x16x16 half/bfloat16 -> float; B as a col_major fragment of Ws (that is
Ws's rows read as B's columns: the transpose MLX's descriptor asks for).

Differences, and why each is neutral or not:
- WMMA's store does not say which element each lane holds, so each 16x16 result goes through a 1 KiB per-warp
  staging area (laid over Ws after the final barrier: the threadgroup memory is MLX's 9 KiB exactly) and lanes store
  16-byte rows; MLX's Dtile.store writes 4 adjacent elements per lane straight from registers. The epilogue: once
  per tile, neutral against the K loop. `mma="ptx"` stores from registers, as MLX does.
- The fragment layouts are NVIDIA's (a lane of a WMMA fragment or an m16n8k16 operand holds pairs along K; Apple's
  holds 4 adjacent elements of a row): the hardware's layout, no choice of the algorithm.
- vector_loads=True (the default) reads a thread's 16 packed bytes with one 16-byte load and writes its 32
  dequantized values with four 16-byte threadgroup stores; MLX's source reads byte by byte and writes element by
  element, leaving any merging to its compiler. vector_loads=False does it as written (16 byte loads, 32 two-byte
  stores). The arithmetic is the same either way: s * q is exact in float (a T scale times a 4-bit code), so the
  compiler's fusing of the multiply and the add changes nothing, and s / 16 * (byte & 0xf0) equals s * (byte >> 4).
  Neutral to slightly in the reference's favour.
- MLX's threadgroup is (32, WN, WM); here a block of 128 threads in x: warp threadIdx.x / 32 is MLX's
  simdgroup_index_in_threadgroup (x + 32 y + 64 z over 32), the same warps with the same work.
- MLX's `volatile int compiler_barrier` (a hint to Apple's compiler that the K step's loads and products stay
  together) has no CUDA counterpart; `#pragma unroll 1` keeps the K step a loop as MLX's pragma does.
- `mma="ptx"`: the same algorithm with the instruction itself (mma.sync m16n8k16, PTX's documented fragment layouts):
  x's operand registers are 32-bit loads from global memory, the weights' are 32-bit loads from Ws (a lane's pair of
  B elements is two adjacent K values of one Ws row, so no transpose is needed), results stored from registers.

nax_qmm(dt) takes the tile MLX picks from M at each call (bm 32 when M <= 32, else 64); shapes that are not multiples
of the tile raise ValueError (MLX's unaligned paths, load_safe / store_safe, are not reproduced).
`/opt/torch/.venv/bin/python bench/cuda_nax_qmm.py` (PYTHONPATH=bench) times it against cuBLAS on the dequantized
weights and checks both against a float64 product.
"""
import os

from cuda_same_shape import _kernel, _prepared, _raw, _time

_SOURCE = r"""
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <mma.h>
using namespace nvcuda;

// T, IS_BF16, BM, BN, BK, WM, WN, GROUP_SIZE, VECTOR_LOADS come from the defines; the weights are 4-bit.
#if IS_BF16
__device__ inline float t_to_f(T v) { return __bfloat162float(v); }
__device__ inline unsigned short f_to_bits(float f) { return __bfloat16_as_ushort(__float2bfloat16_rn(f)); }
#define MMA_PTX "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
__device__ inline unsigned pack2(float a, float b) {
  __nv_bfloat162 v = __floats2bfloat162_rn(a, b);
  return *reinterpret_cast<unsigned*>(&v);
}
#else
__device__ inline float t_to_f(T v) { return __half2float(v); }
__device__ inline unsigned short f_to_bits(float f) { return __half_as_ushort(__float2half_rn(f)); }
#define MMA_PTX "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
__device__ inline unsigned pack2(float a, float b) {
  __half2 v = __floats2half2_rn(a, b);
  return *reinterpret_cast<unsigned*>(&v);
}
#endif

constexpr int BITS = 4;
constexpr int SIMD_SIZE = 32;
constexpr int TGP_SIZE = WM * WN * SIMD_SIZE;
constexpr int pack_factor = 8 / BITS;  // get_pack_factor<4, 8>: values per byte
constexpr int bytes_per_pack = 1;      // get_bytes_per_pack<4>
constexpr int BK_padded = BK + 16 / int(sizeof(T));
constexpr int SM = BM / WM, SN = BN / WN, SK = 32;
constexpr int TM = SM / 16, TN = SN / 16, TK = SK / 16;
static_assert(BK >= SIMD_SIZE && BK % SIMD_SIZE == 0, "BK a multiple of the simdgroup size");
static_assert(SM % 16 == 0 && SN % 16 == 0 && BK % SK == 0, "16x16 fragments, 32-wide K steps");
static_assert(TN % 2 == 0, "tile_matmad_nax's pairs of N fragments");

// QuantizedBlockLoader<T, BROWS = BN, BCOLS = BK, dst_ld = BK_padded, reduction_dim = 1, TGP_SIZE, GROUP_SIZE, 4>
constexpr int BCOLS_PACKED = BK / pack_factor;  // packed bytes of one row per K block
constexpr int n_reads = (BCOLS_PACKED * BN < TGP_SIZE) ? 1 : (BCOLS_PACKED * BN) / TGP_SIZE;
constexpr int group_steps = GROUP_SIZE / BK;
static_assert(BK <= GROUP_SIZE && GROUP_SIZE % BK == 0, "the group size a multiple of the columns");
static_assert(BN * BK_padded * int(sizeof(T)) >= WM * WN * 256 * int(sizeof(float)), "WMMA staging fits in Ws");

// The two dequantized values of one packed byte, as MLX's dequantize<T, 2, 4>: float arithmetic, rounded to T.
__device__ inline void dequant_byte(unsigned w, float s, float s16, float b, unsigned short* out) {
  out[0] = f_to_bits(s * float(w & 0x0fu) + b);
  out[1] = f_to_bits(s16 * float(w & 0xf0u) + b);
}

struct QuantizedBlockLoader {
  const unsigned char* src;
  const T* scales;
  const T* biases;
  unsigned short* dst;  // Ws as 16-bit words
  int group_step_cnt;
  bool active;

  __device__ QuantizedBlockLoader(const unsigned char* src_, const T* scales_, const T* biases_, int src_ld, T* dst_,
                                  int simd_group_id, int simd_lane_id) {
    const int thread_idx = simd_group_id * SIMD_SIZE + simd_lane_id;
    const int bi = n_reads * thread_idx / BCOLS_PACKED;
    const int bj = (n_reads * thread_idx) % BCOLS_PACKED;
    active = !(BCOLS_PACKED * BN < TGP_SIZE && bi >= BN);
    group_step_cnt = 0;
    dst = reinterpret_cast<unsigned short*>(dst_) + bi * BK_padded + bj * pack_factor;
    src = src_ + size_t(bi) * src_ld * bytes_per_pack / pack_factor + bj * bytes_per_pack;
    scales = scales_ + size_t(bi) * src_ld / GROUP_SIZE;
    biases = biases_ + size_t(bi) * src_ld / GROUP_SIZE;
  }

  __device__ void load_unsafe() const {
    if (!active) return;
    const float s = t_to_f(*scales), b = t_to_f(*biases);
    const float s16 = s / 16.0f;
#if VECTOR_LOADS
    static_assert(n_reads % 16 == 0, "vector loads take 16 packed bytes at a time");
#pragma unroll
    for (int v = 0; v < n_reads / 16; v++) {
      union { uint4 u; unsigned char c[16]; } in;
      union { uint4 u[4]; unsigned short h[32]; } out;
      in.u = reinterpret_cast<const uint4*>(src)[v];
#pragma unroll
      for (int i = 0; i < 16; i++) dequant_byte(in.c[i], s, s16, b, out.h + 2 * i);
#pragma unroll
      for (int q = 0; q < 4; q++) reinterpret_cast<uint4*>(dst + 32 * v)[q] = out.u[q];
    }
#else
#pragma unroll
    for (int i = 0; i < n_reads; i++) dequant_byte(src[i * bytes_per_pack], s, s16, b, dst + i * pack_factor);
#endif
  }

  __device__ void next() {
    src += BCOLS_PACKED * bytes_per_pack;
    if (group_steps > 1) {
      if (++group_step_cnt == group_steps) {
        group_step_cnt = 0;
        scales++;
        biases++;
      }
    } else {
      scales++;
      biases++;
    }
  }
};

// qmm_t_nax_tgp_impl with nvcuda::wmma fragments
extern "C" __global__ void __launch_bounds__(TGP_SIZE)
qmm_t_nax(const unsigned char* __restrict__ w, const T* __restrict__ scales, const T* __restrict__ biases,
          const T* __restrict__ x, T* __restrict__ y, int K, int N, int M) {
  __shared__ __align__(32) T Ws[BN * BK_padded];

  const int K_w = K * bytes_per_pack / pack_factor;
  const int K_g = K / GROUP_SIZE;
  const int y_row = blockIdx.y * BM, y_col = blockIdx.x * BN;
  const int simd_gid = threadIdx.x / SIMD_SIZE, simd_lid = threadIdx.x % SIMD_SIZE;

  x += size_t(y_row) * K;
  w += size_t(y_col) * K_w;
  scales += size_t(y_col) * K_g;
  biases += size_t(y_col) * K_g;
  y += size_t(y_row) * N + y_col;

  QuantizedBlockLoader loader_w(w, scales, biases, K, Ws, simd_gid, simd_lid);

  const int tm = SM * (simd_gid / WN), tn = SN * (simd_gid % WN);

  wmma::fragment<wmma::accumulator, 16, 16, 16, float> Dtile[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; i++)
#pragma unroll
    for (int j = 0; j < TN; j++) wmma::fill_fragment(Dtile[i][j], 0.0f);

  x += size_t(tm) * K;

#pragma unroll 1
  for (int k = 0; k < K; k += BK) {
    __syncthreads();  // threadgroup_barrier(mem_flags::mem_threadgroup)
    loader_w.load_unsafe();
    __syncthreads();

#pragma unroll 1
    for (int kk1 = 0; kk1 < BK; kk1 += SK) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> Atile[TM][TK];
      wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::col_major> Btile[TN][TK];
      // Atile.load(x + kk1, K): global memory straight into fragments
#pragma unroll
      for (int i = 0; i < TM; i++)
#pragma unroll
        for (int kk = 0; kk < TK; kk++) wmma::load_matrix_sync(Atile[i][kk], x + size_t(i * 16) * K + kk1 + kk * 16, K);
      // Btile.load<T, BK_padded, 1>(Ws + tn * BK_padded + kk1): rows N, columns K; B = its transpose
#pragma unroll
      for (int j = 0; j < TN; j++)
#pragma unroll
        for (int kk = 0; kk < TK; kk++)
          wmma::load_matrix_sync(Btile[j][kk], Ws + (tn + j * 16) * BK_padded + kk1 + kk * 16, BK_padded);
      // tile_matmad_nax(Dtile, Atile, false, Btile, true)
#pragma unroll
      for (int mm = 0; mm < TM; mm++)
#pragma unroll
        for (int nn = 0; nn < TN; nn += 2)
#pragma unroll
          for (int kk = 0; kk < TK; kk++) {
            wmma::mma_sync(Dtile[mm][nn], Atile[mm][kk], Btile[nn][kk], Dtile[mm][nn]);
            wmma::mma_sync(Dtile[mm][nn + 1], Atile[mm][kk], Btile[nn + 1][kk], Dtile[mm][nn + 1]);
          }
    }

    x += BK;
    loader_w.next();
  }

  __syncthreads();  // before the store, as MLX; here it also frees Ws for the staging below

  // Dtile.store(y + tm * N + tn, N): each 16x16 accumulator rounded to T; lane l writes row l / 2, columns
  // (l % 2) * 8 .. + 7
  float* st = reinterpret_cast<float*>(Ws) + simd_gid * 256;
  const int r = simd_lid / 2, c = (simd_lid % 2) * 8;
  T* d = y + size_t(tm) * N + tn;
#pragma unroll
  for (int i = 0; i < TM; i++)
#pragma unroll
    for (int j = 0; j < TN; j++) {
      wmma::store_matrix_sync(st, Dtile[i][j], 16, wmma::mem_row_major);
      __syncwarp();
      union { uint4 u; unsigned short h[8]; } out;
#pragma unroll
      for (int e = 0; e < 8; e++) out.h[e] = f_to_bits(st[r * 16 + c + e]);
      *reinterpret_cast<uint4*>(d + size_t(i * 16 + r) * N + j * 16 + c) = out.u;
      __syncwarp();
    }
}

// The same with the tensor-core instruction itself: mma.sync m16n8k16 (row.col), PTX's fragment layouts. Lane
// (g = lane / 4, t = lane % 4): A registers {row g, row g + 8} x {k 2t, 2t + 1 | 2t + 8, 2t + 9}; B registers
// {k 2t, 2t + 1 | 2t + 8, 2t + 9} of column (Ws row) g; C {c0, c1} row g, {c2, c3} row g + 8, columns 2t, 2t + 1.
extern "C" __global__ void __launch_bounds__(TGP_SIZE)
qmm_t_nax_mma(const unsigned char* __restrict__ w, const T* __restrict__ scales, const T* __restrict__ biases,
              const T* __restrict__ x, T* __restrict__ y, int K, int N, int M) {
  constexpr int TN8 = SN / 8;
  __shared__ __align__(32) T Ws[BN * BK_padded];

  const int K_w = K * bytes_per_pack / pack_factor;
  const int K_g = K / GROUP_SIZE;
  const int y_row = blockIdx.y * BM, y_col = blockIdx.x * BN;
  const int simd_gid = threadIdx.x / SIMD_SIZE, simd_lid = threadIdx.x % SIMD_SIZE;
  const int g = simd_lid / 4, t = simd_lid % 4;

  x += size_t(y_row) * K;
  w += size_t(y_col) * K_w;
  scales += size_t(y_col) * K_g;
  biases += size_t(y_col) * K_g;
  y += size_t(y_row) * N + y_col;

  QuantizedBlockLoader loader_w(w, scales, biases, K, Ws, simd_gid, simd_lid);

  const int tm = SM * (simd_gid / WN), tn = SN * (simd_gid % WN);

  float acc[TM][TN8][4];
#pragma unroll
  for (int i = 0; i < TM; i++)
#pragma unroll
    for (int j = 0; j < TN8; j++)
#pragma unroll
      for (int e = 0; e < 4; e++) acc[i][j][e] = 0.0f;

  const T* a = x + size_t(tm + g) * K + 2 * t;                    // this lane's row g, columns 2t, 2t + 1
  const T* ws = Ws + (tn + g) * BK_padded + 2 * t;                // Ws row tn + g (output column), k 2t, 2t + 1

#pragma unroll 1
  for (int k = 0; k < K; k += BK) {
    __syncthreads();
    loader_w.load_unsafe();
    __syncthreads();

#pragma unroll 1
    for (int kk1 = 0; kk1 < BK; kk1 += SK) {
      unsigned af[TM][TK][4], bf[TN8][TK][2];
#pragma unroll
      for (int i = 0; i < TM; i++)
#pragma unroll
        for (int kk = 0; kk < TK; kk++) {
          const T* p = a + size_t(i * 16) * K + kk1 + kk * 16;
          af[i][kk][0] = *reinterpret_cast<const unsigned*>(p);                        // row g, k 2t..
          af[i][kk][1] = *reinterpret_cast<const unsigned*>(p + size_t(8) * K);        // row g + 8
          af[i][kk][2] = *reinterpret_cast<const unsigned*>(p + 8);                    // row g, k 2t + 8..
          af[i][kk][3] = *reinterpret_cast<const unsigned*>(p + size_t(8) * K + 8);    // row g + 8, k 2t + 8..
        }
#pragma unroll
      for (int j = 0; j < TN8; j++)
#pragma unroll
        for (int kk = 0; kk < TK; kk++) {
          const T* p = ws + j * 8 * BK_padded + kk1 + kk * 16;
          bf[j][kk][0] = *reinterpret_cast<const unsigned*>(p);       // k 2t, 2t + 1
          bf[j][kk][1] = *reinterpret_cast<const unsigned*>(p + 8);   // k 2t + 8, 2t + 9
        }
#pragma unroll
      for (int mm = 0; mm < TM; mm++)
#pragma unroll
        for (int nn = 0; nn < TN8; nn++)
#pragma unroll
          for (int kk = 0; kk < TK; kk++)
            asm volatile(MMA_PTX "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
                         : "+f"(acc[mm][nn][0]), "+f"(acc[mm][nn][1]), "+f"(acc[mm][nn][2]), "+f"(acc[mm][nn][3])
                         : "r"(af[mm][kk][0]), "r"(af[mm][kk][1]), "r"(af[mm][kk][2]), "r"(af[mm][kk][3]),
                           "r"(bf[nn][kk][0]), "r"(bf[nn][kk][1]));
    }

    a += BK;
    loader_w.next();
  }

  __syncthreads();

  T* d = y + size_t(tm + g) * N + tn + 2 * t;
#pragma unroll
  for (int i = 0; i < TM; i++)
#pragma unroll
    for (int j = 0; j < TN8; j++) {
      *reinterpret_cast<unsigned*>(d + size_t(i * 16) * N + j * 8) = pack2(acc[i][j][0], acc[i][j][1]);
      *reinterpret_cast<unsigned*>(d + size_t(i * 16 + 8) * N + j * 8) = pack2(acc[i][j][2], acc[i][j][3]);
    }
}
"""

_CTYPE = {"f16": "__half", "bf16": "__nv_bfloat16"}
BN, BK, WM, WN = 64, 64, 2, 2  # qmm_nax's fixed bn, bk, wm, wn


def mlx_tile(M):
    """(bm, bn, bk, wm, wn) as quantized.cpp's qmm_nax picks them: bm 32 when one block covers all of M."""
    return (32 if M <= 32 else 64), BN, BK, WM, WN


def nax_qmm(dt, gs=64, bits=4, mma="wmma", vector_loads=True):
    """A function (x, w_packed, scales, biases) -> x @ dequantize(w).T on torch CUDA tensors with MLX's qmm_t_nax
    algorithm and the tile qmm_nax picks for M: x (M, K) of dtype dt ("f16" or "bf16"), w_packed (N, K * bits / 32)
    int32 (or uint32) holding MLX's packed words, scales and biases (N, K / gs) of x's dtype; the result (M, N).
    mma: "wmma" (nvcuda::wmma fragments) or "ptx" (mma.sync m16n8k16, operands and results in registers)."""
    import cupy
    import torch

    if dt not in _CTYPE:
        raise ValueError(f"qmm_t_nax reference: f16 or bf16 activations, not {dt}")
    if bits != 4:
        raise ValueError(f"the reference dequantizes 4-bit weights, not {bits}-bit")
    if gs % BK:
        raise ValueError(f"group size {gs}: the reference takes whole K blocks ({BK}) per group, as "
                         f"QuantizedBlockLoader's general form does (group size 32 has its own form in MLX)")
    if mma not in ("wmma", "ptx"):
        raise ValueError(f"mma: 'wmma' or 'ptx', not {mma!r}")
    tdt = {"f16": torch.float16, "bf16": torch.bfloat16}[dt]
    kernels = {}

    def kernel_for(bm):
        if bm not in kernels:
            defines = [f"T={_CTYPE[dt]}", f"IS_BF16={int(dt == 'bf16')}", f"BM={bm}", f"BN={BN}", f"BK={BK}",
                       f"WM={WM}", f"WN={WN}", f"GROUP_SIZE={gs}", f"VECTOR_LOADS={int(vector_loads)}"]
            kernels[bm] = _kernel(_SOURCE, {"wmma": "qmm_t_nax", "ptx": "qmm_t_nax_mma"}[mma], defines)
        return kernels[bm]

    def prepare(x, w, scales, biases):
        if x.dim() != 2 or w.dim() != 2:
            raise ValueError("x (M, K) and w (N, K * bits / 32)")
        M, K = x.shape
        N = w.shape[0]
        bm, bn, bk, wm, wn = mlx_tile(M)
        if M % bm or N % bn or K % bk or K % gs:
            raise ValueError(f"M={M}, N={N}, K={K} is not a multiple of the tile ({bm}, {bn}, {bk}) and group {gs}")
        if x.dtype != tdt:
            raise ValueError(f"x: {tdt}, not {x.dtype}")
        if w.dtype == getattr(torch, "uint32", None):
            w = w.view(torch.int32)
        if w.dtype != torch.int32 or tuple(w.shape) != (N, K * bits // 32):
            raise ValueError(f"w: the packed words, int32 ({N}, {K * bits // 32}), not {w.dtype} {tuple(w.shape)}")
        for t in (scales, biases):
            if tuple(t.shape) != (N, K // gs) or t.dtype != tdt:
                raise ValueError(f"scales and biases: ({N}, {K // gs}) of x's type, not {t.dtype} {tuple(t.shape)}")
        kernel = kernel_for(bm)
        y = torch.empty((M, N), dtype=tdt, device=x.device)
        args = (_raw(w), _raw(scales), _raw(biases), _raw(x), _raw(y), cupy.int32(K), cupy.int32(N), cupy.int32(M))
        grid = (N // bn, M // bm, 1)
        return (lambda: kernel(grid, (32 * wm * wn,), args)), y

    return _prepared(prepare)


def _check_bits(bits):
    if bits not in (2, 4, 8):
        raise ValueError(f"{bits}-bit: this packing takes bits that divide 32 (2, 4, 8)")


def pack_affine(q, bits=4):
    """Integer codes (N, K) in [0, 2^bits) -> MLX's packing: each row a little-endian bit stream of uint32 words,
    value i at bits [i * bits, (i + 1) * bits), returned as int32 (the words' bits) of shape (N, K * bits / 32)."""
    import torch

    _check_bits(bits)
    per = 32 // bits
    n, k = q.shape
    if k % per:
        raise ValueError(f"a packed row fills whole 32-bit words: K={k} is not a multiple of {per}")
    shifts = torch.arange(per, device=q.device, dtype=torch.int64) * bits
    words = (q.to(torch.int64).reshape(n, k // per, per) << shifts).sum(-1)  # in [0, 2^32)
    return torch.where(words >= 1 << 31, words - (1 << 32), words).to(torch.int32)


def unpack_affine(w_packed, bits=4):
    """The inverse of pack_affine: int32 words (N, K * bits / 32) -> int64 codes (N, K)."""
    import torch

    _check_bits(bits)
    per = 32 // bits
    words = w_packed.to(torch.int64) & 0xFFFFFFFF
    shifts = torch.arange(per, device=w_packed.device, dtype=torch.int64) * bits
    return ((words.unsqueeze(-1) >> shifts) & ((1 << bits) - 1)).reshape(w_packed.shape[0], -1)


def _quantize_codes(w, bits, gs):
    """MLX's documented affine quantization per group of gs along a row: beta = min, s = (max - min) / (2^bits - 1),
    code = round((w - beta) / s); scales and biases stored in w's dtype, the codes computed from the stored values
    (clamped to [0, 2^bits - 1]: the stored s and beta are rounded). Returns (codes, scales, biases)."""
    import torch

    n, k = w.shape
    if k % gs:
        raise ValueError(f"K={k} is not a multiple of the group size {gs}")
    levels = (1 << bits) - 1
    g = w.float().reshape(n, k // gs, gs)
    lo, hi = g.amin(-1), g.amax(-1)
    scales = ((hi - lo) / levels).to(w.dtype)
    biases = lo.to(w.dtype)
    s = scales.float()
    s = torch.where(s == 0, torch.ones_like(s), s)  # a constant group: every code 0, w = bias
    q = torch.round((g - biases.float().unsqueeze(-1)) / s.unsqueeze(-1)).clamp_(0, levels).to(torch.int64)
    return q.reshape(n, k), scales, biases


def quantize_affine(w, bits=4, gs=64):
    """w (N, K) torch CUDA tensor of the activation dtype -> (w_packed int32 (N, K * bits / 32), scales (N, K / gs),
    biases (N, K / gs)) in MLX's affine format: w ~= scale * code + bias per group of gs along each row, the codes
    packed LSB first into uint32 words (pack_affine)."""
    _check_bits(bits)
    q, scales, biases = _quantize_codes(w, bits, gs)
    return pack_affine(q, bits), scales, biases


def dequantize_affine(w_packed, scales, biases, bits=4, gs=64):
    """The weights the kernel multiplies: T(scale * code + bias) computed in float (scale * code is exact in float)
    from the packed words, in scales' dtype, shape (N, K)."""
    q = unpack_affine(w_packed, bits).float()
    n, k = q.shape
    s = scales.float().repeat_interleave(gs, dim=1)
    b = biases.float().repeat_interleave(gs, dim=1)
    return (q * s + b).to(scales.dtype)


def _pack_rows():
    """cases/_quantized_util.pack_rows, the packing the bench's MLX launches upload (loaded alone, as
    bench/cuda_tile_qmv.py does)."""
    import importlib.util

    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "corpus", "mlx-library", "cases",
                        "_quantized_util.py")
    spec = importlib.util.spec_from_file_location("_quantized_util", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.pack_rows


M, K, N = 512, 4096, 14336  # tokens x input features x output features (Llama-3.1-8B's up / gate projection)
TOL = {"f16": 2e-3, "bf16": 1e-2}  # 4x (f16), 2.5x (bf16) y's largest relative rounding to T


def main():
    """The reference alone against cuBLAS (torch.matmul(x, w_dequant.T)) at M=512, K=4096, N=14336, 4-bit, group 64,
    f16 and bf16, timed and checked against x @ w_dequant.T in float64 (w_dequant: the dequantized weights, the same
    T values the kernel and cuBLAS multiply): PYTHONPATH=bench python bench/cuda_nax_qmm.py. Also checks that
    quantize_affine's packing is the bench's (cases/_quantized_util.pack_rows). Exit status 1 on any mismatch."""
    import numpy as np
    import torch

    gs, bits = 64, 4
    flop = 2 * M * N * K
    failed = 0
    torch.manual_seed(0)
    pack_rows = _pack_rows()
    print(f"MLX's tile for M={M}: (bm, bn, bk, wm, wn) = {mlx_tile(M)}, grid ({N // BN}, {M // mlx_tile(M)[0]}, 1), "
          f"threadgroup (32, {WN}, {WM})", flush=True)
    for dt, tdt in (("f16", torch.float16), ("bf16", torch.bfloat16)):
        x = (torch.rand((M, K), device="cuda") * 2 - 1).to(tdt)
        w = (torch.randn((N, K), device="cuda") * 0.05).to(tdt)
        q, scales, biases = _quantize_codes(w, bits, gs)
        w_packed = pack_affine(q, bits)
        # the packing against the bench's (numpy) on a sample of rows, and the round trip over all of it
        rows = q[:64].cpu().numpy()
        pack_ok = bool(np.array_equal(w_packed[:64].cpu().numpy().view(np.uint32), pack_rows(rows, bits)))
        pack_ok &= bool(torch.equal(unpack_affine(w_packed, bits), q))
        w_dq = dequantize_affine(w_packed, scales, biases, bits, gs)
        quant_err = float(((w.float() - w_dq.float()).abs() / scales.float().repeat_interleave(gs, 1)).max())
        print(f"{dt}: packing {'matches the bench' if pack_ok else 'DIFFERS from the bench'}; max |w - dequant| "
              f"{quant_err:.2f} scale", flush=True)
        failed += not pack_ok
        want = x.double() @ w_dq.double().T
        args = (x, w_packed, scales, biases)
        runs = [("cuBLAS (dequantized weights)", lambda a, wq, s, b: torch.matmul(a, w_dq.T), False)]
        runs += [(f"same-algorithm CUDA ({mma}{'' if vl else ', element loads'})", nax_qmm(dt, gs, bits, mma, vl), True)
                 for mma, vl in (("wmma", True), ("ptx", True), ("wmma", False))]
        for name, fn, checked in runs:
            got = fn(*args).double()
            err = float(((got - want).abs() / want.abs().clamp(min=1)).max())
            us = _time(fn, args)
            ok = err <= TOL[dt]
            failed += checked and not ok
            verdict = ("correct" if ok else "WRONG") if checked else ("within" if ok else "outside") + " tolerance"
            print(f"qmm_t 4-bit gs{gs} {dt} M={M} K={K} N={N} {name}: {us:.1f} us, {flop / us / 1e6:.1f} TFLOP/s, "
                  f"max rel diff vs float64 {err:.1g} (tolerance {TOL[dt]:g}): {verdict}", flush=True)
        # MLX's other tile, bm 32 for M <= 32: checked, not timed
        x32 = x[:32]
        want32 = want[:32]
        for mma in ("wmma", "ptx"):
            got = nax_qmm(dt, gs, bits, mma)(x32, w_packed, scales, biases).double()
            err = float(((got - want32).abs() / want32.abs().clamp(min=1)).max())
            ok = err <= TOL[dt]
            failed += not ok
            print(f"qmm_t 4-bit gs{gs} {dt} M=32 (tile {mlx_tile(32)}) K={K} N={N} same-algorithm CUDA ({mma}): "
                  f"max rel diff vs float64 {err:.1g}: {'correct' if ok else 'WRONG'}", flush=True)
    print("all correct" if not failed else f"{failed} MISMATCH(ES)", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
