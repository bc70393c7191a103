// metal2vk metal_stdlib: the compiler-internal spellings of Apple's metal_stdlib that Metal code calls directly
// (MLX's bf16_math.h defines its bfloat overloads through them): `__metal_NAME(args..., fast)` math and simd
// builtins and the `__METAL_*__` macros. Each forwards to the metal:: function of the same meaning; the trailing
// fast-math flag picks metal::fast:: or metal::precise:: where the function has both (elsewhere it changes nothing).
#ifndef __M2V_APPLE_BUILTINS_H
#define __M2V_APPLE_BUILTINS_H

#define __METAL_FAST_MATH__ true
#define __METAL_PRECISE_MATH__ false
#ifdef __M2V_FAST_MATH__
#define __METAL_MAYBE_FAST_MATH__ __METAL_FAST_MATH__
#else
#define __METAL_MAYBE_FAST_MATH__ __METAL_PRECISE_MATH__
#endif

#define __M2V_BUILTIN1(NAME, FN)                                                                   \
  template <class T> METAL_FUNC auto __metal_##NAME(T x, bool = false) { return metal::FN(x); }
#define __M2V_BUILTIN2(NAME, FN)                                                                   \
  template <class T> METAL_FUNC auto __metal_##NAME(T x, T y, bool = false) { return metal::FN(x, y); }
#define __M2V_BUILTIN3(NAME, FN)                                                                   \
  template <class T> METAL_FUNC auto __metal_##NAME(T x, T y, T z, bool = false) { return metal::FN(x, y, z); }
// the functions with a fast and a precise variant follow the flag
#define __M2V_BUILTIN1M(NAME)                                                                      \
  template <class T> METAL_FUNC auto __metal_##NAME(T x, bool fast = __METAL_MAYBE_FAST_MATH__) {  \
    return fast ? metal::fast::NAME(x) : metal::precise::NAME(x);                                  \
  }
#define __M2V_BUILTIN2M(NAME)                                                                      \
  template <class T> METAL_FUNC auto __metal_##NAME(T x, T y, bool fast = __METAL_MAYBE_FAST_MATH__) { \
    return fast ? metal::fast::NAME(x, y) : metal::precise::NAME(x, y);                            \
  }

__M2V_BUILTIN1(fabs, fabs) __M2V_BUILTIN1M(acos) __M2V_BUILTIN1M(acosh) __M2V_BUILTIN1M(asin)
__M2V_BUILTIN1M(asinh) __M2V_BUILTIN1M(atan) __M2V_BUILTIN1M(atanh) __M2V_BUILTIN1(ceil, ceil)
__M2V_BUILTIN1M(cos) __M2V_BUILTIN1M(cosh) __M2V_BUILTIN1M(cospi) __M2V_BUILTIN1M(exp)
__M2V_BUILTIN1M(exp10) __M2V_BUILTIN1M(exp2) __M2V_BUILTIN1(floor, floor) __M2V_BUILTIN1(fract, fract)
__M2V_BUILTIN1M(log) __M2V_BUILTIN1M(log10) __M2V_BUILTIN1M(log2) __M2V_BUILTIN1(rint, rint)
__M2V_BUILTIN1(round, round) __M2V_BUILTIN1(rsqrt, rsqrt) __M2V_BUILTIN1M(sin) __M2V_BUILTIN1M(sinh)
__M2V_BUILTIN1M(sinpi) __M2V_BUILTIN1(sqrt, sqrt) __M2V_BUILTIN1M(tan) __M2V_BUILTIN1M(tanh)
__M2V_BUILTIN1M(tanpi) __M2V_BUILTIN1(trunc, trunc)
__M2V_BUILTIN2M(atan2) __M2V_BUILTIN2(divide, divide) __M2V_BUILTIN2(fmax, fmax) __M2V_BUILTIN2(fmin, fmin)
__M2V_BUILTIN2(fmod, fmod) __M2V_BUILTIN2(nextafter, nextafter) __M2V_BUILTIN2M(pow) __M2V_BUILTIN2M(powr)
__M2V_BUILTIN2(copysign, copysign) __M2V_BUILTIN3(fma, fma) __M2V_BUILTIN3(fmax3, fmax3)
__M2V_BUILTIN3(fmin3, fmin3) __M2V_BUILTIN3(fmedian3, fmedian3)
template <class T> METAL_FUNC auto __metal_erf(T x, bool = false) { return __m2v::lib::erf(x); }
template <class T> METAL_FUNC auto __metal_log1p(T x, bool = false) { return __m2v::lib::log1p(x); }
#undef __M2V_BUILTIN1
#undef __M2V_BUILTIN2
#undef __M2V_BUILTIN3
#undef __M2V_BUILTIN1M
#undef __M2V_BUILTIN2M

template <class T, class I> METAL_FUNC auto __metal_ldexp(T x, I k, bool = false) { return metal::ldexp(x, k); }
template <class T, class I> METAL_FUNC auto __metal_frexp(T x, thread I *e) { return metal::frexp(x, *e); }

// simd builtins: the metal:: functions of the same name
#define __M2V_SIMD1(NAME) template <class T> METAL_FUNC T __metal_simd_##NAME(T x) { return metal::simd_##NAME(x); }
#define __M2V_SIMD2(NAME)                                                                          \
  template <class T, class U> METAL_FUNC T __metal_simd_##NAME(T x, U n) { return metal::simd_##NAME(x, ushort(n)); }
// bitwise reductions of floating-point values work on their bits
#define __M2V_SIMD_BITS(NAME)                                                                      \
  template <class T> METAL_FUNC T __metal_simd_##NAME(T x) {                                       \
    using B = __m2v::uint_for_t<T>;                                                                \
    return __builtin_bit_cast(T, metal::simd_##NAME(__builtin_bit_cast(B, x)));                    \
  }
__M2V_SIMD_BITS(and) __M2V_SIMD_BITS(or) __M2V_SIMD_BITS(xor)
#undef __M2V_SIMD_BITS
__M2V_SIMD1(sum) __M2V_SIMD1(product) __M2V_SIMD1(min) __M2V_SIMD1(max) __M2V_SIMD1(prefix_inclusive_sum) __M2V_SIMD1(prefix_exclusive_sum)
__M2V_SIMD1(prefix_inclusive_product) __M2V_SIMD1(prefix_exclusive_product) __M2V_SIMD1(broadcast_first)
__M2V_SIMD2(broadcast) __M2V_SIMD2(shuffle) __M2V_SIMD2(shuffle_xor) __M2V_SIMD2(shuffle_up)
__M2V_SIMD2(shuffle_down) __M2V_SIMD2(shuffle_rotate_up) __M2V_SIMD2(shuffle_rotate_down)
#undef __M2V_SIMD1
#undef __M2V_SIMD2
template <class T, class U> METAL_FUNC T __metal_simd_shuffle_and_fill_up(T d, T f, U delta, U modulo) {
  return metal::simd_shuffle_and_fill_up(d, f, ushort(delta), ushort(modulo));
}
template <class T, class U> METAL_FUNC T __metal_simd_shuffle_and_fill_down(T d, T f, U delta, U modulo) {
  return metal::simd_shuffle_and_fill_down(d, f, ushort(delta), ushort(modulo));
}
// `__metal_get_X(T())`: the built-in value X as a T
template <class T> METAL_FUNC T __metal_get_simdgroup_size(T) { return T(__m2v::simd_size()); }
template <class T> METAL_FUNC T __metal_get_thread_index_in_simdgroup(T) { return T(__m2v::simd_lane_id()); }
#endif
