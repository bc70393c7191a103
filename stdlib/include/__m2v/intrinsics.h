// metal2vk metal_stdlib: compiler intrinsics (declared, never defined; see docs/STDLIB.md).
// The compiler recognises a call by its demangled name __m2v::NAME; argument and result types come from
// the call. They are templates here so one declaration serves every scalar and vector type.
#ifndef __M2V_INTRINSICS_H
#define __M2V_INTRINSICS_H
#include "base.h"

namespace __m2v {
void threadgroup_barrier(uint flags);
void simdgroup_barrier(uint flags);

#define __M2V_DECL1(NAME) template <class T> T NAME(T);
#define __M2V_DECL2(NAME) template <class T> T NAME(T, uint);
#define __M2V_REDUCE(P)                                                                            \
  __M2V_DECL1(P##_reduce_add) __M2V_DECL1(P##_reduce_mul) __M2V_DECL1(P##_reduce_smin)             \
  __M2V_DECL1(P##_reduce_umin) __M2V_DECL1(P##_reduce_fmin) __M2V_DECL1(P##_reduce_smax)           \
  __M2V_DECL1(P##_reduce_umax) __M2V_DECL1(P##_reduce_fmax) __M2V_DECL1(P##_reduce_and)            \
  __M2V_DECL1(P##_reduce_or) __M2V_DECL1(P##_reduce_xor)                                           \
  __M2V_DECL1(P##_scan_incl_add) __M2V_DECL1(P##_scan_incl_mul)                                    \
  __M2V_DECL1(P##_scan_excl_add) __M2V_DECL1(P##_scan_excl_mul)                                    \
  __M2V_DECL2(P##_shuffle) __M2V_DECL2(P##_shuffle_xor) __M2V_DECL2(P##_shuffle_up)                \
  __M2V_DECL2(P##_shuffle_down) __M2V_DECL2(P##_shuffle_rotate_up)                                 \
  __M2V_DECL2(P##_shuffle_rotate_down) __M2V_DECL1(P##_broadcast_first)                            \
  bool P##_all(bool);                                                                              \
  bool P##_any(bool);                                                                              \
  bool P##_is_first();
__M2V_REDUCE(simd)
__M2V_REDUCE(quad)
#undef __M2V_REDUCE
#undef __M2V_DECL1
#undef __M2V_DECL2

// simdgroup_multiply_accumulate on matrix units (lower/CooperativeMatrix.cpp). simd_mma_cooperative(a, b) becomes
// true where the lowering will run simd_mma(a, b, c) (Apple's lane layout in and out, float accumulator) as a
// cooperative-matrix multiply, false where the caller's subgroup-shuffle code runs instead.
template <class A, class B> bool simd_mma_cooperative(A, B);
template <class A, class B> metal::vec<float, 2> simd_mma(A, B, metal::vec<float, 2>);

ulong simd_ballot(bool);
ushort quad_ballot(bool);
uint simd_lane_id();
uint simd_size();
uint simd_group_id();

template <class T> T rsqrt(T);
template <class T> T fract(T);
template <class T> T sign(T);

// is_function_constant_defined(name): the compiler replaces the call with the constant's "defined" flag.
bool function_constant_defined(const __attribute__((address_space(4))) void*);
} // namespace __m2v

#define is_function_constant_defined(name) (::__m2v::function_constant_defined(&(name)))
#endif
