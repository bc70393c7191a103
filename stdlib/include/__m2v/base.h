// metal2vk metal_stdlib: base definitions shared by every header.
// Address-space keywords, METAL_FUNC, scalar typedefs, vec<T,N>, the named vector types and the
// internal shape/type helpers (namespace __m2v) that the function headers are generated from.
#ifndef __M2V_BASE_H
#define __M2V_BASE_H

// Kept as words when a file is preprocessed to be compiled again later (m2v metal -c, deferred_source.h): the
// Metal rewriter reads these keywords, not what they expand to.
#ifndef __M2V_KEEP_METAL_KEYWORDS
#define device __attribute__((address_space(1)))
// constant memory is read-only: `constant T` is `const T` (so `constant int&` binds `const constant int`)
#define constant const __attribute__((address_space(4)))
// the constant address space without the const (function constants, which the pipeline sets)
#define __M2V_CONSTANT_SPACE __attribute__((address_space(4)))
#define threadgroup __attribute__((address_space(3)))
#define threadgroup_imageblock __attribute__((address_space(3)))
#define thread
#define ray_data
#define object_data __attribute__((address_space(1)))
#endif

#define METAL_FUNC inline __attribute__((__always_inline__))
#define __M2V_F inline __attribute__((__always_inline__))

// ---- scalar types -------------------------------------------------------------------------------
typedef _Float16 half;
typedef __bf16 bfloat;
typedef unsigned char uchar;
typedef unsigned short ushort;
typedef unsigned int uint;
typedef unsigned long ulong;
typedef unsigned long size_t;
typedef long ptrdiff_t;
typedef signed char int8_t;
typedef unsigned char uint8_t;
typedef short int16_t;
typedef unsigned short uint16_t;
typedef int int32_t;
typedef unsigned int uint32_t;
typedef long int64_t;
typedef unsigned long uint64_t;
typedef long intptr_t;
typedef unsigned long uintptr_t;
typedef decltype(nullptr) nullptr_t;

namespace metal {
template <class T, int N> using vec = T __attribute__((ext_vector_type(N)));
using ::half; using ::bfloat; using ::uchar; using ::ushort; using ::uint; using ::ulong; using ::size_t;
using ::ptrdiff_t; using ::int8_t; using ::uint8_t; using ::int16_t; using ::uint16_t; using ::int32_t;
using ::uint32_t; using ::int64_t; using ::uint64_t; using ::nullptr_t;
}

#define __M2V_VEC_TYPES(T, NAME)                                                                   \
  typedef T NAME##2 __attribute__((ext_vector_type(2)));                                           \
  typedef T NAME##3 __attribute__((ext_vector_type(3)));                                           \
  typedef T NAME##4 __attribute__((ext_vector_type(4)));                                           \
  namespace metal { using ::NAME##2; using ::NAME##3; using ::NAME##4; }
__M2V_VEC_TYPES(bool, bool)
__M2V_VEC_TYPES(char, char)
__M2V_VEC_TYPES(unsigned char, uchar)
__M2V_VEC_TYPES(short, short)
__M2V_VEC_TYPES(unsigned short, ushort)
__M2V_VEC_TYPES(int, int)
__M2V_VEC_TYPES(unsigned int, uint)
__M2V_VEC_TYPES(long, long)
__M2V_VEC_TYPES(unsigned long, ulong)
__M2V_VEC_TYPES(_Float16, half)
__M2V_VEC_TYPES(__bf16, bfloat)
__M2V_VEC_TYPES(float, float)
__M2V_VEC_TYPES(double, double)
#undef __M2V_VEC_TYPES

// ---- internal helpers ---------------------------------------------------------------------------
namespace __m2v {
template <bool B, class T = void> struct enable_if {};
template <class T> struct enable_if<true, T> { using type = T; };
template <bool B, class T = void> using enable_if_t = typename enable_if<B, T>::type;
template <bool B, class T, class F> struct conditional { using type = T; };
template <class T, class F> struct conditional<false, T, F> { using type = F; };
template <bool B, class T, class F> using conditional_t = typename conditional<B, T, F>::type;
template <class A, class B> inline constexpr bool same_v = false;
template <class A> inline constexpr bool same_v<A, A> = true;
template <class T> struct remove_cvref { using type = T; };
template <class T> struct remove_cvref<const T> { using type = T; };
template <class T> struct remove_cvref<volatile T> { using type = T; };
template <class T> struct remove_cvref<const volatile T> { using type = T; };
template <class T> struct remove_cvref<T &> : remove_cvref<T> {};
template <class T> struct remove_cvref<T &&> : remove_cvref<T> {};

// scalar categories (bool is neither integer nor floating here)
template <class T> inline constexpr bool is_fp_v = false;
template <> inline constexpr bool is_fp_v<half> = true;
template <> inline constexpr bool is_fp_v<bfloat> = true;
template <> inline constexpr bool is_fp_v<float> = true;
template <> inline constexpr bool is_fp_v<double> = true;
template <class T> inline constexpr bool is_int_v = false;
#define __M2V_INT(T) template <> inline constexpr bool is_int_v<T> = true;
__M2V_INT(char) __M2V_INT(signed char) __M2V_INT(unsigned char) __M2V_INT(short) __M2V_INT(unsigned short)
__M2V_INT(int) __M2V_INT(unsigned int) __M2V_INT(long) __M2V_INT(unsigned long) __M2V_INT(long long)
__M2V_INT(unsigned long long)
#undef __M2V_INT
template <class T> inline constexpr bool is_bool_v = same_v<T, bool>;
template <class T> inline constexpr bool is_arith_v = is_fp_v<T> || is_int_v<T> || is_bool_v<T>;
template <class T> inline constexpr bool is_signed_int_v = is_int_v<T> && (T(-1) < T(0));

template <class T, int N> struct packed_vec;

// shape: scalar (n = 1, is_vec = false) or ext vector; packed_vec is treated as its vector
template <class T> struct shape {
  static constexpr bool ok = is_arith_v<T>;
  static constexpr bool is_vec = false;
  static constexpr int n = 1;
  using elem = T;
  using value = T;
  template <class E> using rebind = E;
};
template <class T, int N> struct shape<T __attribute__((ext_vector_type(N)))> {
  static constexpr bool ok = is_arith_v<T>;
  static constexpr bool is_vec = true;
  static constexpr int n = N;
  using elem = T;
  using value = T __attribute__((ext_vector_type(N)));
  template <class E> using rebind = E __attribute__((ext_vector_type(N)));
};
template <class T, int N> struct shape<packed_vec<T, N>> : shape<T __attribute__((ext_vector_type(N)))> {};
template <class T> struct shape<const T> : shape<T> {};
template <class T> struct shape<volatile T> : shape<T> {};
template <class T> struct shape<const volatile T> : shape<T> {};

template <class T> using elem_t = typename shape<T>::elem;
template <class T> using value_t = typename shape<T>::value;
template <class T, class E> using rebind_t = typename shape<T>::template rebind<E>;
template <class T> inline constexpr bool is_vec_v = shape<T>::is_vec;
template <class T> inline constexpr int nelem_v = shape<T>::n;

// conversion of a scalar, vector or packed vector to the scalar or vector type To:
// scalar->scalar static_cast, scalar->vector splat, vector->vector element-wise (never bit cast)
template <class To, class From> __M2V_F To cvt(From x) {
  using E = typename shape<To>::elem;
  using F = typename shape<From>::elem;
  if constexpr ((same_v<E, half> && same_v<F, bfloat>) || (same_v<E, bfloat> && same_v<F, half>)) {
    // clang has no direct half <-> bfloat conversion; go through float (exact for the widening step)
    return cvt<To>(cvt<typename shape<From>::template rebind<float>>(x));
  } else if constexpr (!shape<From>::is_vec) {
    if constexpr (shape<To>::is_vec) return (To)static_cast<E>(x);
    else return static_cast<To>(x);
  } else {
    static_assert(shape<To>::n == shape<From>::n, "metal: vector lengths differ");
    if constexpr (same_v<From, To>) return x;
    else return __builtin_convertvector(static_cast<value_t<From>>(x), To);
  }
}

// common scalar type of two scalars (Metal has no double: a double (literal) yields to the other float)
template <class A, class B> struct common_scalar {
  using type = conditional_t<
      same_v<A, B>, A,
      conditional_t<is_fp_v<A> && !is_fp_v<B>, A,
      conditional_t<is_fp_v<B> && !is_fp_v<A>, B,
      conditional_t<is_fp_v<A> && is_fp_v<B>,
          conditional_t<same_v<A, double>, B,
          conditional_t<same_v<B, double>, A, float>>,
      decltype(A() + B())>>>>;
};
// common type of scalars and vectors: a vector wins over a scalar (the scalar takes its element type)
template <class A, class B, class = void> struct common2 {};
template <class A, class B>
struct common2<A, B, enable_if_t<shape<A>::ok && shape<B>::ok && !shape<A>::is_vec && !shape<B>::is_vec>> {
  using type = typename common_scalar<A, B>::type;
};
template <class A, class B>
struct common2<A, B, enable_if_t<shape<A>::ok && shape<B>::ok && shape<A>::is_vec && !shape<B>::is_vec>> {
  using type = value_t<A>;
};
template <class A, class B>
struct common2<A, B, enable_if_t<shape<A>::ok && shape<B>::ok && !shape<A>::is_vec && shape<B>::is_vec>> {
  using type = value_t<B>;
};
template <class A, class B>
struct common2<A, B, enable_if_t<shape<A>::ok && shape<B>::ok && shape<A>::is_vec && shape<B>::is_vec &&
                                 shape<A>::n == shape<B>::n>> {
  using type = rebind_t<A, typename common_scalar<elem_t<A>, elem_t<B>>::type>;
};
template <class... T> struct common;
template <class A> struct common<A> { using type = enable_if_t<shape<A>::ok, value_t<A>>; };
template <class A, class B> struct common<A, B> : common2<A, B> {};
template <class A, class B, class C> struct common<A, B, C> : common2<typename common2<A, B>::type, C> {};
template <class... T> using common_t = typename common<T...>::type;

// floating result: integer/bool elements become float
template <class T> using to_fp_t = rebind_t<T, conditional_t<is_fp_v<elem_t<T>>, elem_t<T>, float>>;
template <class... T> using fp_t = to_fp_t<common_t<T...>>;
// type arithmetic is done in: half and bfloat in float for transcendental functions...
template <class T> using fcomp_t = rebind_t<T, conditional_t<sizeof(elem_t<T>) == 2, float, elem_t<T>>>;
// ... bfloat only in float for exact operations (min, max, floor, ...)
template <class T> using xcomp_t = rebind_t<T, conditional_t<same_v<elem_t<T>, bfloat>, float, elem_t<T>>>;
template <class... T> using int_t = enable_if_t<is_int_v<elem_t<common_t<T...>>>, common_t<T...>>;

// unsigned / signed integer of the same width
template <int S> struct uint_of;
template <> struct uint_of<1> { using type = unsigned char; using stype = signed char; };
template <> struct uint_of<2> { using type = unsigned short; using stype = short; };
template <> struct uint_of<4> { using type = unsigned int; using stype = int; };
template <> struct uint_of<8> { using type = unsigned long; using stype = long; };
template <class T> using uint_for_t = rebind_t<T, typename uint_of<sizeof(elem_t<T>)>::type>;
template <class T> using sint_for_t = rebind_t<T, typename uint_of<sizeof(elem_t<T>)>::stype>;

// a boolean shape of T (bool for scalars, boolN for vectors)
template <class T> using bool_t = rebind_t<T, bool>;
// turn a comparison result (bool, boolN or -1/0 integer mask) into bool / boolN
template <class M> __M2V_F auto to_bool(M m) {
  if constexpr (shape<M>::is_vec) return __builtin_convertvector(m, rebind_t<M, bool>);
  else return static_cast<bool>(m);
}
// per-element select: m ? a : b, m a bool / boolN / integer mask of the same length
template <class T, class M> __M2V_F T sel(M m, T a, T b) {
  if constexpr (shape<T>::is_vec) return to_bool(m) ? a : b;
  else return m ? a : b;
}
// half(x), bfloat(x), static_cast<half>(x), static_cast<bfloat>(x) (the source rewriter sends them here): Metal
// converts between half and bfloat directly, C++ only through float.
template <class To, class From> __M2V_F To scalar_cast(From v) {
  if constexpr ((__is_same(To, half) && __is_same(From, bfloat)) || (__is_same(To, bfloat) && __is_same(From, half)))
    return (To)(float)v;
  else
    return (To)v;
}

} // namespace __m2v

// Built into Metal, without any #include: memory scopes.
#define __METAL_MEMORY_SCOPE_THREAD__ 0
#define __METAL_MEMORY_SCOPE_SIMDGROUP__ 1
#define __METAL_MEMORY_SCOPE_THREADGROUP__ 2
#define __METAL_MEMORY_SCOPE_DEVICE__ 3
#define __METAL_MEMORY_SCOPE_SYSTEM__ 4
namespace metal {
enum thread_scope : int {
  thread_scope_thread = __METAL_MEMORY_SCOPE_THREAD__,
  thread_scope_simdgroup = __METAL_MEMORY_SCOPE_SIMDGROUP__,
  thread_scope_threadgroup = __METAL_MEMORY_SCOPE_THREADGROUP__,
  thread_scope_device = __METAL_MEMORY_SCOPE_DEVICE__
};
}

#include "vec_ctor.h"
#include "casts.h"
#endif
