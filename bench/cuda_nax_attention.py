"""A hand-written CUDA attention kernel with the algorithm of MLX's NAX attention (steel_attention_nax.h's
`attention_nax` with steel/attn/nax.h's tiles), as the reference for what that algorithm can reach on an NVIDIA GPU
beside PyTorch's SDPA (flash attention).

Same as `steel_attention_<T>_bq64_bk32_bd128_wm4_wn1_mask<T>` for full (non-causal) self-attention without mask or
sinks, scale 1 / sqrt(D), D = 128, query and key lengths L a multiple of 64 (MLX's align_Q and align_K function
constants both true, so none of its partial-tile paths run), as sdpa_full_self_attention_nax launches it:
- grid (L / 64, H, B) of threadgroups (32, 4, 1): block (x, y, z) handles the 64 query rows 64x of head y of batch z
  (keys and values of head y / (H / H_kv), MLX's gqa_factor), warp w (simd_group_id, threadIdx.y) its 16 rows
  16w .. 16w + 15 (TQ = 1), all 128 columns of its output in registers as 8 float 16x16 fragments (Otile,
  NAXTile<float, 1, 8>);
- the keys are walked in L / 32 blocks of 32 (not unrolled, as MLX's loop). In each block:
  - S (16 x 32, two float 16x16 fragments) = Q K^T over the head dimension in 8 steps of 16 (MLX's
    `#pragma clang loop unroll_count(4)` becomes `#pragma unroll 4`): each step loads the warp's 16x16 fragment of Q
    and the 32x16 block of K (Ktile 2x1, used transposed) STRAIGHT FROM GLOBAL MEMORY (Q again for every key block,
    as MLX's Qtile lives inside the loop; no shared-memory staging anywhere in the kernel: every warp reads all of K
    and V itself) and multiplies them into S (MLX: one 16x32x16 matmul2d per step);
  - S *= scale * 1.44269504089 (MLX's scale2, log2(e) folded into the scale), then MLX's online softmax in base 2:
    new_max = max(running max, row max of S) (per 16x16 fragment: the lane's 4 elements, then two xor shuffles across
    the 4 lanes sharing the row), P = exp2(S - new_max), factor = exp2(old max - new_max), running sum = running sum *
    factor + row sum of P (the same reduction shape), O *= factor; exp2 is the hardware's approximate exp2 (PTX
    ex2.approx.ftz, as Metal's fast::exp2); the running max starts at -FLT_MAX (Limits<float>::finite_min);
  - a warp barrier (simdgroup_barrier), then O += P V: output column pairs of 16x16 fragments (32 columns) in 4 steps,
    a threadgroup barrier before the third (MLX's threadgroup_barrier(mem_none) at id == 4 for BD = 128), each step
    two key fragments: the 16x32 block of V (Vtile 1x2) loaded straight from global memory and multiplied by the
    16x16 fragment of P that S's registers hold (no round trip through memory; MLX: one 16x32x16 matmul2d);
- after the last block a threadgroup barrier, O *= 1 / running sum, O rounded to T and stored to MLX's output layout,
  (B, L, H, D) in memory (row stride H * D; the function returns it as a (B, H, L, D) view).
The float accumulators, the softmax statistics and the order of every reduction are MLX's.

Tensor cores through PTX mma.sync m16n8k16 (f16 or bf16 operands, float accumulators; m16n8k8 tf32 for P V in the
"tf32" form), each 16x16x16 product of MLX's as two of them, with PTX's documented fragment layouts; the accumulator
layout must be known to the code (the row max and sum are computed on registers, and S's registers become P's operand
registers), which nvcuda::wmma does not expose. Differences from MLX's kernel, each with its effect:
- P's precision in P V: MLX passes P to matmul2d as float (its AccumType) with V in T, a mixed product whose precision
  and rate Apple does not document. NVIDIA's tensor cores take no float operand, so there are two forms (pv):
  "16bit" (the default) rounds P to T, as flash attention does, and uses the same 16x8x16 f16/bf16 products as Q K^T;
  P is in [0, 1], the rounding costs 2^-11 (f16) or 2^-8 (bf16) relative per weight, the row sum stays the float one,
  as MLX's. "tf32" keeps P in float as far as the tensor cores take it: P rounded to tf32 (10-bit mantissa), V widened
  exactly (every f16 and bf16 value is a tf32 value), 16x8x8 tf32 products at half the 16-bit rate, the shared
  dimension taken in the order S's accumulator holds it (position t of a product is key 2t, position t + 4 key
  2t + 1) so that P still needs no data movement; the same loads of V. The pair bounds what MLX's float P costs on
  this GPU: "16bit" is the algorithm at its fastest here, "tf32" the closest to MLX's float P.
- the hardware's fragment layouts: a lane holds 2 adjacent elements of rows g and g + 8 (g = lane / 4) where Apple's
  holds 4 adjacent elements of two rows 8 apart, so every operand is read as 32-bit loads (Q and K: two elements of a
  row; V: two elements of a row, moved into the key-pair layout the instruction wants by movmatrix, an 8x8 register
  transpose) where Apple's lane reads 4 adjacent elements (64 bits once the compiler merges MLX's element loads); the
  same bytes from the same rows, in the same order of fragments.
  The row reductions shuffle with xor 1 and 2 (Apple's layout: 1 and 8), two shuffles per row either way.
- the epilogue stores 2 adjacent elements per instruction (Apple's: 4), and 1 / sum is IEEE division; once per
  kernel, neutral against the key loop.
"""
import math
import sys

from cuda_same_shape import _kernel, _prepared, _raw, _time

_SOURCE = r"""
#include <cuda_fp16.h>
#include <cuda_bf16.h>

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

// c (16x8, float) += a (16x16) b (16x8). a: 4 registers, b: 2 registers, each two 16-bit elements (PTX's layouts:
// lane = 4 g + t; a {row g, k 2t..2t+1}, {row g + 8, k 2t..}, {row g, k 2t + 8..}, {row g + 8, k 2t + 8..};
// b {k 2t..2t+1, column g}, {k 2t + 8.., column g}; c {row g, columns 2t, 2t + 1}, {row g + 8, same columns}).
__device__ inline void mma16816(float (&c)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  asm(MMA_PTX "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

#ifdef PV_TF32
// c (16x8, float) += a (16x8, tf32) b (8x8, tf32) (PTX's layouts: a {row g, k t}, {row g + 8, k t}, {row g, k t + 4},
// {row g + 8, k t + 4}; b {k t, column g}, {k t + 4, column g}; c as above).
__device__ inline void mma1688(float (&c)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ inline unsigned to_tf32(float x) {
  unsigned r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
  return r;
}

// The float bits (exact in tf32) of the low and high 16-bit element of a pair.
#ifdef MMA_BF16
__device__ inline unsigned lo_f32(unsigned w) { return w << 16; }
__device__ inline unsigned hi_f32(unsigned w) { return w & 0xffff0000u; }
#else
__device__ inline unsigned half_f32(unsigned short h) { return __float_as_uint(__half2float(__ushort_as_half(h))); }
__device__ inline unsigned lo_f32(unsigned w) { return half_f32((unsigned short)(w & 0xffffu)); }
__device__ inline unsigned hi_f32(unsigned w) { return half_f32((unsigned short)(w >> 16)); }
#endif
#endif

// The 8x8 transpose of a 16-bit matrix held one row pair per lane (row lane / 4, columns 2 (lane % 4) + {0, 1}).
__device__ inline unsigned transpose8x8(unsigned v) {
  unsigned r;
  asm("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;" : "=r"(r) : "r"(v));
  return r;
}

// Metal's fast::exp2: the hardware's approximate exp2.
__device__ inline float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// Two adjacent 16-bit elements as one 32-bit load.
__device__ inline unsigned ld2(const T* p) { return *reinterpret_cast<const unsigned*>(p); }

__device__ inline float xor_shuffle(float v, int mask) { return __shfl_xor_sync(0xffffffffu, v, mask); }

constexpr int BQ = 64, BK = 32, BD = 128, WM = 4, kU = 16;
constexpr int TD = BD / kU;  // head-dimension fragments: 8
constexpr int TK = BK / kU;  // key fragments per block: 2
constexpr float kFiniteMin = -3.40282346638528859812e+38f;  // Limits<float>::finite_min

// Q, K, V: (B, H, L, BD) and (B, H / gqa_factor, L, BD) contiguous; O: (B, L, H, BD) contiguous (MLX's output).
extern "C" __global__ void __launch_bounds__(32 * WM)
nax_attention(const T* __restrict__ Q, const T* __restrict__ K, const T* __restrict__ V, T* __restrict__ O, int L,
              int H, int gqa_factor, float scale) {
  const int lane = threadIdx.x, warp = threadIdx.y;  // simd_lane_id, simd_group_id of threadgroup (32, WM, 1)
  const int g = lane / 4, t = lane % 4;
  const size_t q_row = BD, o_row = size_t(H) * BD;  // Q_strides[2] (= K's, V's), O_strides[2]
  const size_t b = blockIdx.z, h = blockIdx.y, kv_h = blockIdx.y / gqa_factor, qb = blockIdx.x;
  const int H_kv = H / gqa_factor;

  // Move to the block (batch z, head y, query rows BQ x) and to the warp's rows tm .. tm + 15
  const int tm = kU * warp;
  Q += ((b * H + h) * L + qb * BQ + tm) * q_row;
  K += (b * H_kv + kv_h) * L * q_row;
  V += (b * H_kv + kv_h) * L * q_row;
  O += b * size_t(L) * o_row + h * BD + (qb * BQ + tm) * o_row;

  const float scale2 = scale * 1.44269504089f;

  // This lane's first element of each fragment it loads: row g, columns 2t, 2t + 1.
  const T* q = Q + g * q_row + 2 * t;
  const T* k = K + g * q_row + 2 * t;
  const T* v = V + g * q_row + 2 * t;

  // Otile: 16 x 128 as 16 accumulators of 16x8 (n8 tile j: columns 8j .. 8j + 7).
  float o[2 * TD][4];
#pragma unroll
  for (int j = 0; j < 2 * TD; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) o[j][e] = 0.0f;

  // Row statistics of the lane's two rows, g ([0]) and g + 8 ([1]).
  float max_score[2] = {kFiniteMin, kFiniteMin}, sum_score[2] = {0.0f, 0.0f};

  const int kb_lim = L / BK;  // params->NK
#pragma unroll 1
  for (int kb = 0; kb < kb_lim; ++kb) {
    // S = Q K^T: 16 x 32 as 4 accumulators of 16x8 (keys 8j .. 8j + 7 of the block).
    float s[2 * TK][4];
#pragma unroll
    for (int j = 0; j < 2 * TK; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) s[j][e] = 0.0f;

#pragma unroll
    for (int ik = 0; ik < TK; ik += 2) {
#pragma unroll 4
      for (int id = 0; id < TD; ++id) {
        // Qtile (16x16: rows tm.., columns 16 id..) and Ktile (32x16: keys 16 ik.., columns 16 id..)
        unsigned qf[4];
        const T* qp = q + id * kU;
        qf[0] = ld2(qp);
        qf[1] = ld2(qp + 8 * q_row);
        qf[2] = ld2(qp + 8);
        qf[3] = ld2(qp + 8 * q_row + 8);
        unsigned kf[4][2];
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          const T* kp = k + (ik * kU + 8 * j) * q_row + id * kU;  // key 16 ik + 8j + g
          kf[j][0] = ld2(kp);
          kf[j][1] = ld2(kp + 8);
        }
        // S fragments ik, ik + 1 += Qtile Ktile^T (MLX's 16x32x16 matmul2d with transposed right input)
#pragma unroll
        for (int j = 0; j < 4; ++j) mma16816(s[2 * ik + j], qf, kf[j][0], kf[j][1]);
      }
    }

    // Scale S
#pragma unroll
    for (int j = 0; j < 2 * TK; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) s[j][e] *= scale2;

    // Row max: per 16x16 fragment, the lane's 4 elements of each row, then the 4 lanes sharing the row
    float new_max[2] = {max_score[0], max_score[1]};
#pragma unroll
    for (int ik = 0; ik < TK; ++ik)
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        float x = fmaxf(fmaxf(s[2 * ik][2 * r], s[2 * ik][2 * r + 1]),
                        fmaxf(s[2 * ik + 1][2 * r], s[2 * ik + 1][2 * r + 1]));
        x = fmaxf(x, xor_shuffle(x, 1));
        x = fmaxf(x, xor_shuffle(x, 2));
        new_max[r] = fmaxf(new_max[r], x);
      }

    // P = exp2(S - new max)
#pragma unroll
    for (int j = 0; j < 2 * TK; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) s[j][e] = fast_exp2(s[j][e] - new_max[e / 2]);

    // factor = exp2(old max - new max)
    float factor[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      factor[r] = fast_exp2(max_score[r] - new_max[r]);
      max_score[r] = new_max[r];
    }

    // Row sum
#pragma unroll
    for (int r = 0; r < 2; ++r) sum_score[r] = sum_score[r] * factor[r];
#pragma unroll
    for (int ik = 0; ik < TK; ++ik)
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        float x = (s[2 * ik][2 * r] + s[2 * ik][2 * r + 1]) + (s[2 * ik + 1][2 * r] + s[2 * ik + 1][2 * r + 1]);
        x = x + xor_shuffle(x, 1);
        x = x + xor_shuffle(x, 2);
        sum_score[r] = sum_score[r] + x;
      }

    // Update O
#pragma unroll
    for (int j = 0; j < 2 * TD; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) o[j][e] *= factor[e / 2];

    __syncwarp();  // simdgroup_barrier(mem_flags::mem_none)

#ifndef PV_TF32
    // P fragment ik as the left operand (16x16: keys 16 ik .. 16 ik + 15), rounded to T
    unsigned pf[TK][4];
#pragma unroll
    for (int ik = 0; ik < TK; ++ik) {
      pf[ik][0] = pack2(s[2 * ik][0], s[2 * ik][1]);          // row g, keys 2t..
      pf[ik][1] = pack2(s[2 * ik][2], s[2 * ik][3]);          // row g + 8
      pf[ik][2] = pack2(s[2 * ik + 1][0], s[2 * ik + 1][1]);  // row g, keys 8 + 2t..
      pf[ik][3] = pack2(s[2 * ik + 1][2], s[2 * ik + 1][3]);  // row g + 8, keys 8 + 2t..
    }
#else
    // P kept in float (rounded to tf32) as the left operand of 16x8x8 products, one per 8 keys (S's accumulator
    // j, keys 8j .. 8j + 7). The shared dimension is taken in the order the accumulator already holds it: position
    // t is key 8j + 2t, position t + 4 is key 8j + 2t + 1, so P needs no shuffle, and V's rows follow that order.
    unsigned pa[2 * TK][4];
#pragma unroll
    for (int j = 0; j < 2 * TK; ++j) {
      pa[j][0] = to_tf32(s[j][0]);  // row g, key 2t
      pa[j][1] = to_tf32(s[j][2]);  // row g + 8, key 2t
      pa[j][2] = to_tf32(s[j][1]);  // row g, key 2t + 1
      pa[j][3] = to_tf32(s[j][3]);  // row g + 8, key 2t + 1
    }
#endif

    // O = P V
#pragma unroll
    for (int id = 0; id < TD; id += 2) {
      if (id == 4) __syncthreads();  // threadgroup_barrier(mem_flags::mem_none), BD == 128
#pragma unroll
      for (int ik = 0; ik < TK; ++ik) {
        // Vtile (16x32: keys 16 ik.., columns 16 id .. 16 id + 31) as 4 right operands of 16x8; after the transpose
        // a lane holds {V[key 2t][column g], V[key 2t + 1][column g]} of each 8x8 block
        unsigned vf[4][2];
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          const T* vp = v + (ik * kU) * q_row + id * kU + 8 * j;  // key 16 ik + g, columns 16 id + 8j + 2t..
          vf[j][0] = transpose8x8(ld2(vp));               // keys 16 ik + 0..7
          vf[j][1] = transpose8x8(ld2(vp + 8 * q_row));   // keys 16 ik + 8..15
        }
        // O fragments id, id + 1 += P fragment ik x Vtile (MLX's 16x32x16 matmul2d)
#pragma unroll
        for (int j = 0; j < 4; ++j) {
#ifndef PV_TF32
          mma16816(o[2 * id + j], pf[ik], vf[j][0], vf[j][1]);
#else
#pragma unroll
          for (int kh = 0; kh < 2; ++kh) mma1688(o[2 * id + j], pa[2 * ik + kh], lo_f32(vf[j][kh]), hi_f32(vf[j][kh]));
#endif
        }
      }
    }

    // Prepare for next iteration
    k += BK * q_row;
    v += BK * q_row;
  }

  // Normalize output
  __syncthreads();  // threadgroup_barrier(mem_flags::mem_none)
  float rcp[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) rcp[r] = 1.0f / sum_score[r];
#pragma unroll
  for (int j = 0; j < 2 * TD; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) o[j][e] *= rcp[e / 2];

  // Store results: row g, columns 8j + 2t, + 1 and row g + 8
  T* op = O + g * o_row + 2 * t;
#pragma unroll
  for (int j = 0; j < 2 * TD; ++j) {
    *reinterpret_cast<unsigned*>(op + 8 * j) = pack2(o[j][0], o[j][1]);
    *reinterpret_cast<unsigned*>(op + 8 * o_row + 8 * j) = pack2(o[j][2], o[j][3]);
  }
}
"""

_CTYPE = {"f16": "__half", "bf16": "__nv_bfloat16"}
BQ, BK, BD, WM, WN = 64, 32, 128, 4, 1


def nax_attention(dt, pv="16bit"):
    """A function (q, k, v) -> softmax(q k^T / sqrt(D)) v with MLX's NAX attention algorithm (bq 64, bk 32, bd 128,
    4x1 warps). q: (B, H, L, D), k and v: (B, H_kv, L, D) with H_kv dividing H, contiguous torch CUDA tensors of dtype
    dt ("f16" or "bf16"), D = 128, L a multiple of 64. The result is a (B, H, L, D) view of MLX's (B, L, H, D) output
    layout; the same tensors on the next call reuse the prepared launch and output. pv: "16bit" (P rounded to T,
    16x8x16 products) or "tf32" (P kept in float as far as the tensor cores take it, 16x8x8 tf32 products)."""
    import cupy
    import torch

    if pv not in ("16bit", "tf32"):
        raise ValueError(f"pv {pv!r}: '16bit' or 'tf32'")
    tdt = {"f16": torch.float16, "bf16": torch.bfloat16}[dt]
    defines = ([f"T={_CTYPE[dt]}"] + (["MMA_BF16"] if dt == "bf16" else []) +
               (["PV_TF32"] if pv == "tf32" else []))
    kernel = _kernel(_SOURCE, "nax_attention", defines)

    def prepare(q, k, v):
        if q.dim() != 4 or k.dim() != 4 or v.dim() != 4:
            raise ValueError("q, k and v must be (B, H, L, D)")
        B, H, L, D = q.shape
        Hk = k.shape[1]
        if D != BD:
            raise ValueError(f"head dimension {D}: this kernel is MLX's bd {BD} instance")
        if L % BQ:
            raise ValueError(f"sequence length {L} is not a multiple of {BQ} (MLX's aligned path only)")
        if tuple(k.shape) != (B, Hk, L, D) or tuple(v.shape) != (B, Hk, L, D) or Hk == 0 or H % Hk:
            raise ValueError(f"k {tuple(k.shape)} and v {tuple(v.shape)} do not fit q {tuple(q.shape)}")
        for name, x in (("q", q), ("k", k), ("v", v)):
            if x.dtype != tdt or not x.is_cuda or not x.is_contiguous():
                raise ValueError(f"{name} must be a contiguous CUDA tensor of {tdt}")
        o = torch.empty((B, L, H, D), dtype=tdt, device=q.device)  # MLX's output: (B, L, H, D) in memory
        args = (_raw(q), _raw(k), _raw(v), _raw(o), cupy.int32(L), cupy.int32(H), cupy.int32(H // Hk),
                cupy.float32(1.0 / math.sqrt(D)))
        grid = (L // BQ, H, B)
        return (lambda: kernel(grid, (32, WM, WN), args)), o.transpose(1, 2)

    return _prepared(prepare)


def _reference(q, k, v, heads_per_chunk=4):
    """softmax(q k^T / sqrt(D)) v in float64, a few heads at a time (L = 8192: 2 GiB of scores per 4 heads)."""
    import torch

    B, H, L, D = q.shape
    group = H // k.shape[1]
    out = torch.empty((B, H, L, D), dtype=torch.float64, device=q.device)
    for b in range(B):
        for h0 in range(0, H, heads_per_chunk):
            hs = list(range(h0, min(H, h0 + heads_per_chunk)))
            kv = [h // group for h in hs]
            s = torch.matmul(q[b, hs].double(), k[b, kv].double().transpose(-1, -2)) / math.sqrt(D)
            out[b, hs] = torch.matmul(torch.softmax(s, dim=-1), v[b, kv].double())
            del s
    return out


def _inputs(B, H, Hk, L, tdt):
    """q, k uniform in [-2, 2), v in [-1, 1) (cases/nax.py's attention inputs): scores of standard deviation ~1.3."""
    import torch

    def make(heads, lo, hi):
        return (torch.rand((B, heads, L, BD), device="cuda") * (hi - lo) + lo).to(tdt)

    return make(H, -2, 2), make(Hk, -2, 2), make(Hk, -1, 1)


def main():
    """The reference alone against PyTorch's SDPA, checked and timed:
    PYTHONPATH=bench python3 bench/cuda_nax_attention.py (from the repository root), both P V forms. Each output is
    compared with a float64 computation (SDPA's own difference printed beside it); the verdict is PASS when the
    reference's max abs difference is within the tolerance, f16 4e-3, bf16 3e-2 (rounding P and O to 16 bits costs a
    few 1e-4 and a few 1e-3 on these inputs, SDPA's too; a wrong index or a broken softmax gives differences of order
    1). Exit status 1 on any failure."""
    import torch

    torch.manual_seed(0)
    tdts = {"f16": torch.float16, "bf16": torch.bfloat16}
    tol = {"f16": 4e-3, "bf16": 3e-2}
    failures = []

    def check(label, dt, fns, q, k, v):
        want = _reference(q, k, v)
        gqa = k.shape[1] != q.shape[1]
        sdpa = torch.nn.functional.scaled_dot_product_attention(q, k, v, **({"enable_gqa": True} if gqa else {}))
        err_sdpa = float((sdpa.double() - want).abs().max())
        for pv, fn in fns.items():
            got = fn(q, k, v)
            err = float((got.double() - want).abs().max()) if bool(torch.isfinite(got).all()) else math.inf
            diff_sdpa = float((got.double() - sdpa.double()).abs().max())
            ok = err <= tol[dt]
            if not ok:
                failures.append(f"{label} pv={pv}")
            print(f"{label} pv={pv}: max abs diff vs float64 {err:.2e} (SDPA's {err_sdpa:.2e}), vs SDPA "
                  f"{diff_sdpa:.2e}: {'PASS' if ok else 'FAIL'}", flush=True)
        del want, sdpa

    for dt in ("f16", "bf16"):
        fns = {pv: nax_attention(dt, pv) for pv in ("16bit", "tf32")}
        # small shapes first: several batches, heads and query blocks, grouped-query heads, one block
        for B, H, Hk, L in ((2, 3, 3, 192), (1, 8, 2, 320), (1, 1, 1, 64)):
            check(f"{dt} B={B} H={H} H_kv={Hk} L={L}", dt, fns, *_inputs(B, H, Hk, L, tdts[dt]))
        for L in (2048, 8192):
            B, H = 1, 32
            q, k, v = _inputs(B, H, H, L, tdts[dt])
            check(f"{dt} B={B} H={H} L={L}", dt, fns, q, k, v)
            flops = 4 * B * H * L * L * BD
            for name, f in ([(f"same-algorithm CUDA (MLX NAX), pv={pv}", fn) for pv, fn in fns.items()] +
                            [("torch SDPA", torch.nn.functional.scaled_dot_product_attention)]):
                us = _time(f, (q, k, v))
                print(f"{dt} B={B} H={H} L={L} D={BD} {name}: {us:.1f} us, {flops / us / 1e6:.1f} TFLOP/s", flush=True)
            del q, k, v
            torch.cuda.empty_cache()

    print("verdict: " + ("all checks PASS" if not failures else "FAIL: " + "; ".join(failures)), flush=True)
    if failures:
        sys.exit(1)


if __name__ == "__main__":
    main()
