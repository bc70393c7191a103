// -*- C++ -*-  metal2vk metal_stdlib: MetalPerformancePrimitives' matrix multiply on cooperative tensors
// (mpp::tensor_ops::matmul2d with execution_simdgroup), as Metal 4 kernels use it between registers.
//
// A cooperative tensor of a matmul2d operand holds the operand as it is stored (M x K for the left input, K x N for
// the right, M x N for the destination; K x M and N x K when the descriptor transposes them), in 16 x 16 blocks in
// row-major block order, 8 elements per lane and block. Element i of a block is at row fm + 8 * (i / 4), column
// fn + i % 4 of the block, with q = lane / 4, fm = (q & 4) | ((lane >> 1) & 3), fn = ((q & 2) | (lane & 1)) * 4
// (docs/STDLIB.md). Apple leaves this layout to the implementation; MLX's NAX kernels fix it (BaseNAXFrag), so it is
// ours.
//
// run() is built from 8 x 8 simdgroup_matrix multiplies, so it takes their paths: the device's matrix units where the
// lowering can (lower/CooperativeMatrix.cpp), subgroup shuffles otherwise. A 16 x 16 block splits into four 8 x 8
// fragments in Apple's lane layout without moving data between lanes: rows r and r + 8, and the lane's columns
// {0, 1} and {2, 3} of its four (columns {0,1,4,5,8,9,12,13} and {2,3,6,7,10,11,14,15} of the block, in that order).
// A destination and a right input that is not transposed split that way as they are; a left input (whose columns
// are the shared dimension) and a transposed right input are regrouped with shuffles first.
// With relaxed precision a float operand beside a half or bfloat one is rounded to that type first (multiply_type).
// 8-bit integer operands (int8 x int8 or int4 tensors, int32 results) multiply as half, which holds them exactly, and
// each 16-deep slice of the product is summed in float (exact: at most 16 * 2^14) and added to the integer result.
// A left or right input may be a tensor over memory (tensor_inline, <metal_tensor>): it is read into the cooperative
// layout first, elements outside its extents as 0; its dimension 0 is the operand's columns as stored.
// Tensor destinations and execution_simdgroups<N> are not implemented: exit code 3 at the use.
#ifndef __M2V_METAL_PERFORMANCE_PRIMITIVES
#define __M2V_METAL_PERFORMANCE_PRIMITIVES
#include <metal_simdgroup_matrix>
#include <metal_tensor>

namespace mpp {
namespace tensor_ops {

template <class T> struct dynamic_length {
  static constexpr T value = T(-1);
};
template <class T> constexpr T dynamic_length_v = dynamic_length<T>::value;

struct matmul2d_descriptor {
  enum class mode { multiply, multiply_accumulate };
  int m, n, k;
  bool transpose_left, transpose_right;
  bool relaxed_precision;
  mode matmul_mode;

  constexpr matmul2d_descriptor(int __m, int __n, int __k = dynamic_length_v<int>, bool __transpose_left = false,
                                bool __transpose_right = false, bool __relaxed_precision = false,
                                mode __matmul_mode = mode::multiply)
      : m(__m), n(__n), k(__k), transpose_left(__transpose_left), transpose_right(__transpose_right),
        relaxed_precision(__relaxed_precision), matmul_mode(__matmul_mode) {}
  // Metal 4 passes the descriptor itself as a template argument (a C++20 class-type parameter); the C++17 front end
  // takes it as this packed integer, through this conversion, and unpacks it below.
  constexpr operator long() const {
    return long(m & 0xffff) | long(n & 0xffff) << 16 | long(k & 0xffff) << 32 | long(transpose_left) << 48 |
           long(transpose_right) << 49 | long(relaxed_precision) << 50 |
           long(matmul_mode == mode::multiply_accumulate) << 51;
  }
};

} // namespace tensor_ops
} // namespace mpp

namespace __m2v {
namespace nax {
struct desc {
  int m, n, k;
  bool ta, tb, relaxed, accumulate;
  static constexpr desc of(long d) {
    return desc{int(d & 0xffff),     int((d >> 16) & 0xffff), int(short((d >> 32) & 0xffff)), bool((d >> 48) & 1),
                bool((d >> 49) & 1), bool((d >> 50) & 1),     bool((d >> 51) & 1)};
  }
};

// The element type an operand of type T is multiplied in beside an operand of type Other: with relaxed precision
// (which lets the implementation "sacrifice accuracy for performance", Apple's matmul2d header), a float operand
// beside a half or bfloat one is rounded to that type, so that both are 16-bit and the product can take the matrix
// units (MLX's NAX attention multiplies its float probabilities by half or bfloat values this way).
template <class T, class Other, bool Relaxed>
using multiply_type = conditional_t<
    is_int_v<T>, half,
    conditional_t<Relaxed && same_v<T, float> && (same_v<Other, half> || same_v<Other, bfloat>), Other, T>>;

// A cooperative tensor: Rows x Cols as stored, in 16 x 16 blocks (row-major block order), 8 elements per lane each.
template <class T, int Rows, int Cols> struct coop {
  static_assert(Rows % 16 == 0 && Cols % 16 == 0,
                "metal2vk unsupported: matmul2d cooperative tensors whose sides are not multiples of 16");
  static constexpr int kBlocksDown = Rows / 16, kBlocksAcross = Cols / 16, kSize = Rows * Cols / 32;
  typedef T value_type;
  T __e[kSize];
  METAL_FUNC thread T &operator[](int i) thread { return __e[i]; }
  METAL_FUNC const thread T &operator[](int i) const thread { return __e[i]; }
  METAL_FUNC static constexpr int get_capacity() { return kSize; }
  METAL_FUNC constexpr int size() const thread { return kSize; }
  // the 8 elements of block (r, c)
  METAL_FUNC thread T *block(int r, int c) thread { return __e + (r * kBlocksAcross + c) * 8; }
  METAL_FUNC const thread T *block(int r, int c) const thread { return __e + (r * kBlocksAcross + c) * 8; }
};

// The 8 x 8 fragment (rows 8 * h.., lane column pair p) of a block, and back.
template <class F, class T> METAL_FUNC F frag_of(const thread T *b, int h, int p) {
  F f;
  f.__e = vec_ctor<metal::vec<typename F::value_type, 2>>(b[h * 4 + p * 2], b[h * 4 + p * 2 + 1]);
  return f;
}
template <class F, class T> METAL_FUNC void store_frag(thread T *b, int h, int p, const thread F &f) {
  b[h * 4 + p * 2] = T(f.__e[0]);
  b[h * 4 + p * 2 + 1] = T(f.__e[1]);
}

// The 8 x 8 fragment of a block's rows 8h.. and its columns 8c.. in natural order (Apple's lane layout): the lane's
// pair at row fm, columns 8c + 4 * b3 + 2 * b0 (+1) is held by the lane with bit 3 = c and bit 0 = b3, as its pair
// b0 of row half h. Two shuffles: the source's two pairs; each lane keeps the one its bit 0 names.
template <class F, class T> METAL_FUNC F natural_columns(const thread T *b, int h, int c, uint lane) {
  using E = typename F::value_type;
  ushort src = ushort((lane & ~9u) | (uint(c) << 3) | ((lane >> 3) & 1u));
  metal::vec<E, 2> lo = metal::simd_shuffle(vec_ctor<metal::vec<E, 2>>(b[h * 4], b[h * 4 + 1]), src);
  metal::vec<E, 2> hi = metal::simd_shuffle(vec_ctor<metal::vec<E, 2>>(b[h * 4 + 2], b[h * 4 + 3]), src);
  F f;
  f.__e = (lane & 1u) ? hi : lo;
  return f;
}

// a[m] = a[m ^ t] for this lane's t (0..7): three conditional swaps, no shuffle.
template <class E> METAL_FUNC void xor_permute(thread E *a, uint t) {
#pragma clang loop unroll(full)
  for (uint bit = 1; bit < 8; bit <<= 1) {
    bool swap = (t & bit) != 0;
#pragma clang loop unroll(full)
    for (uint m = 0; m < 8; ++m)
      if ((m & bit) == 0) {
        E x = a[m], y = a[m | bit];
        a[m] = swap ? y : x;
        a[m | bit] = swap ? x : y;
      }
  }
}

// The transpose of a 16 x 16 block, as a block in the layout (this lane's 8 elements), in 8 shuffles. With
// t = (lane >> 1) & 7, element i of lane L of the transpose is element t(L) of lane (L & 1) << 4 | i' << 1 | L >> 4,
// for the 8 values i' of bits 1-3: every lane needs the same index from 8 lanes. In shuffle k each lane sends its
// element t ^ k and the receiver keeps it as its element t ^ k (then both are t of the other side): slot orders that
// differ per lane only by an XOR, undone by xor_permute on each side.
template <class E, class T> METAL_FUNC void transposed_block(thread E *out, const thread T *b, uint lane) {
  uint t = (lane >> 1) & 7u;
  E p[8];
#pragma clang loop unroll(full)
  for (uint i = 0; i < 8; ++i) p[i] = E(b[i]);
  xor_permute(p, t);
  uint base = ((lane & 1u) << 4) | ((lane >> 4) & 1u);
#pragma clang loop unroll(full)
  for (uint k = 0; k < 8; ++k) out[k] = metal::simd_shuffle(p[k], ushort(base | ((t ^ k) << 1)));
  xor_permute(out, t);
}

// A tensor over memory as a cooperative tensor of Rows x Cols (as stored; the tensor's dimension 0 is the columns).
template <class T, int Rows, int Cols, class E, class X>
METAL_FUNC coop<T, Rows, Cols> coop_of(const thread metal::tensor<E, X, metal::tensor_inline>& t, uint lane) {
  static_assert(X::rank() == 2, "metal2vk unsupported: matmul2d tensor operands of rank other than 2");
  coop<T, Rows, Cols> c;
  uint q = lane / 4;
  int fm = int((q & 4u) | ((lane >> 1) & 3u)), fn = int(((q & 2u) | (lane & 1u)) * 4u);
#pragma clang loop unroll(full)
  for (int br = 0; br < Rows / 16; ++br)
#pragma clang loop unroll(full)
    for (int bc = 0; bc < Cols / 16; ++bc)
#pragma clang loop unroll(full)
      for (int i = 0; i < 8; ++i)
        c.block(br, bc)[i] = T(t.get_or_zero(bc * 16 + fn + i % 4, br * 16 + fm + 8 * (i / 4)));
  return c;
}

template <long D, class Scope> struct matmul2d_impl {
  static_assert(__m2v::same_v<Scope, metal::execution_simdgroup>,
                "metal2vk unsupported: matmul2d with an execution scope other than execution_simdgroup");
  static constexpr desc d = desc::of(D);
  static_assert(d.m > 0 && d.n > 0 && d.k > 0 && d.m % 16 == 0 && d.n % 16 == 0 && d.k % 16 == 0,
                "metal2vk unsupported: matmul2d on cooperative tensors needs static m, n, k that are multiples of 16");
  static constexpr int M = d.m, N = d.n, K = d.k;
  static constexpr int LeftRows = d.ta ? K : M, LeftCols = d.ta ? M : K;
  static constexpr int RightRows = d.tb ? N : K, RightCols = d.tb ? K : N;

  template <class A, class B, class C> METAL_FUNC coop<A, LeftRows, LeftCols> get_left_input_cooperative_tensor() {
    return coop<A, LeftRows, LeftCols>();
  }
  template <class A, class B, class C> METAL_FUNC coop<B, RightRows, RightCols> get_right_input_cooperative_tensor() {
    return coop<B, RightRows, RightCols>();
  }
  template <class LeftCoop, class RightCoop, class C>
  METAL_FUNC coop<C, M, N> get_destination_cooperative_tensor() {
    return coop<C, M, N>();
  }

  // dst = left * right (+ dst with multiply_accumulate)
  template <class TA, class TB, class TC>
  METAL_FUNC void run(const thread coop<TA, LeftRows, LeftCols> &left, const thread coop<TB, RightRows, RightCols> &right,
                      thread coop<TC, M, N> &dst) {
    using FA = metal::simdgroup_matrix<multiply_type<TA, TB, d.relaxed>, 8, 8>;
    using FB = metal::simdgroup_matrix<multiply_type<TB, TA, d.relaxed>, 8, 8>;
    using FC = metal::simdgroup_matrix<float, 8, 8>;
    uint lane = __m2v::simd_lane_id();
#pragma clang loop unroll(full)
    for (int bm = 0; bm < M / 16; ++bm) {
      // The left input's rows bm as four natural 8 x 8 fragments per k block: [h][k block][column half]
      FA a[2][K / 16][2];
#pragma clang loop unroll(full)
      for (int bk = 0; bk < K / 16; ++bk) {
        if constexpr (!d.ta) {
#pragma clang loop unroll(full)
          for (int h = 0; h < 2; ++h)
#pragma clang loop unroll(full)
            for (int c = 0; c < 2; ++c) a[h][bk][c] = natural_columns<FA>(left.block(bm, bk), h, c, lane);
        } else {
          typename FA::value_type t[8];
          transposed_block<typename FA::value_type>(t, left.block(bk, bm), lane);
#pragma clang loop unroll(full)
          for (int h = 0; h < 2; ++h)
#pragma clang loop unroll(full)
            for (int c = 0; c < 2; ++c) a[h][bk][c] = natural_columns<FA>(t, h, c, lane);
        }
      }
#pragma clang loop unroll(full)
      for (int bn = 0; bn < N / 16; ++bn) {
        thread TC *cb = dst.block(bm, bn);
#pragma clang loop unroll(full)
        for (int h = 0; h < 2; ++h)
#pragma clang loop unroll(full)
          for (int p = 0; p < 2; ++p) {
            // An integer result takes each 16-deep slice's float sum (exact) as an integer; a float one accumulates.
            constexpr bool integral = is_int_v<TC>;
            FC acc = d.accumulate && !integral ? frag_of<FC>(cb, h, p)
                                               : metal::make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
            TC whole[2] = {d.accumulate && integral ? cb[h * 4 + p * 2] : TC(0),
                           d.accumulate && integral ? cb[h * 4 + p * 2 + 1] : TC(0)};
#pragma clang loop unroll(full)
            for (int bk = 0; bk < K / 16; ++bk) {
              if constexpr (integral) acc = metal::make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
              if constexpr (d.tb) {
                typename FB::value_type t[8];
                transposed_block<typename FB::value_type>(t, right.block(bn, bk), lane);
#pragma clang loop unroll(full)
                for (int kh = 0; kh < 2; ++kh)
                  metal::simdgroup_multiply_accumulate(acc, a[h][bk][kh], frag_of<FB>(t, kh, p), acc);
              } else {
#pragma clang loop unroll(full)
                for (int kh = 0; kh < 2; ++kh)
                  metal::simdgroup_multiply_accumulate(acc, a[h][bk][kh], frag_of<FB>(right.block(bk, bn), kh, p),
                                                       acc);
              }
              if constexpr (integral) {
                whole[0] += TC(acc.__e[0]);
                whole[1] += TC(acc.__e[1]);
              }
            }
            if constexpr (integral) {
              cb[h * 4 + p * 2] = whole[0];
              cb[h * 4 + p * 2 + 1] = whole[1];
            } else {
              store_frag(cb, h, p, acc);
            }
          }
      }
    }
  }

  // A left or right input that is a tensor over memory.
  template <class TA, class E, class X, class TC>
  METAL_FUNC void run(const thread coop<TA, LeftRows, LeftCols>& left,
                      const thread metal::tensor<E, X, metal::tensor_inline>& right, thread coop<TC, M, N>& dst) {
    using TB = typename metal::tensor<E, X, metal::tensor_inline>::value_type;
    run(left, coop_of<TB, RightRows, RightCols>(right, __m2v::simd_lane_id()), dst);
  }
  template <class E, class X, class TB, class TC>
  METAL_FUNC void run(const thread metal::tensor<E, X, metal::tensor_inline>& left,
                      const thread coop<TB, RightRows, RightCols>& right, thread coop<TC, M, N>& dst) {
    using TA = typename metal::tensor<E, X, metal::tensor_inline>::value_type;
    run(coop_of<TA, LeftRows, LeftCols>(left, __m2v::simd_lane_id()), right, dst);
  }
  template <class L, class R, class E, class X>
  METAL_FUNC void run(const thread L &, const thread R &, const thread metal::tensor<E, X, metal::tensor_inline> &) {
    static_assert(sizeof(X) == 0, "metal2vk unsupported: matmul2d with a tensor destination");
  }
  template <class EA, class XA, class EB, class XB, class TC>
  METAL_FUNC void run(const thread metal::tensor<EA, XA, metal::tensor_inline>& left,
                      const thread metal::tensor<EB, XB, metal::tensor_inline>& right, thread coop<TC, M, N>& dst) {
    using TB = typename metal::tensor<EB, XB, metal::tensor_inline>::value_type;
    run(left, coop_of<TB, RightRows, RightCols>(right, __m2v::simd_lane_id()), dst);
  }
};
} // namespace nax
} // namespace __m2v

namespace mpp {
namespace tensor_ops {
// C = A * B (+ C): M x N x K on cooperative tensors of one simdgroup.
template <long Descriptor, class Scope> struct matmul2d : __m2v::nax::matmul2d_impl<Descriptor, Scope> {};
} // namespace tensor_ops
} // namespace mpp
#endif
