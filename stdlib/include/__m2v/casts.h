// metal2vk metal_stdlib: what the rewriter turns four more Metal conversions into.
//   - `static_cast<T>(x)` with T a single name (a template parameter or an alias) becomes
//     __m2v::static_cast_<T>(x): Metal converts half <-> bfloat and vectors element-wise, C++ does neither (it
//     rejects the first and bit-casts the second); everything else is the C++ static_cast.
//   - a C-style cast `(T) x` with T a single name becomes __m2v::c_cast_<T>(x): the same conversions, and what a
//     C-style cast does otherwise.
//   - a braced list of 2 to 4 values passed as a call argument (`f({a, b, c})`) becomes __m2v::braced(a, b, c),
//     which converts to a vector of that length (Metal's vector initializer lists) or to any type that the list
//     initializes (`T{a, b, c}`); C++ has no implicit conversion from a braced list to a vector.
//   - the second and third operands of a conditional expression become __m2v::value(x) (below).
#ifndef __M2V_CASTS_H
#define __M2V_CASTS_H
#include "base.h"
#include "vec_ctor.h"

namespace __m2v {
template <class T> T &&declval_() noexcept;

template <class To, class F> inline constexpr bool metal_converts_v =
    shape<F>::ok && shape<To>::ok && !__is_class(F) &&
    ((shape<F>::is_vec && shape<To>::is_vec) || (same_v<elem_t<To>, half> && same_v<elem_t<F>, bfloat>) ||
     (same_v<elem_t<To>, bfloat> && same_v<elem_t<F>, half>));
// (by value: the deduced type loses the address space and const of `in[i]`, and a vector element, `v.y`, binds
// to nothing else; Metal code does not cast to a reference through a template parameter)
template <class To, class From> constexpr __M2V_F To static_cast_(From v) {
  if constexpr (metal_converts_v<To, From>)
    return cvt<To>(static_cast<value_t<From>>(v));
  else
    return static_cast<To>(v);
}

// A C-style cast `(T) x` with T a single name: Metal's conversions as static_cast_ makes them (vectors element-wise,
// half <-> bfloat by value), everything else what the C-style cast does (pointers reinterpreted, `void` discards).
template <class To, class From> constexpr __M2V_F To c_cast_(From v) {
  if constexpr (metal_converts_v<To, From>)
    return cvt<To>(static_cast<value_t<From>>(v));
  else
    return (To)v;
}

// `b.xy` on a bool vector (clang has no component names for them): the components, as a value.
template <int... I, class V> constexpr __M2V_F auto swizzle(V v) {
  using E = elem_t<V>;
  if constexpr (sizeof...(I) == 1) {
    constexpr int index[] = {I...};
    return E(v[index[0]]);
  } else {
    using R = E __attribute__((ext_vector_type(sizeof...(I))));
    R r;
    int k = 0;
    ((r[k++] = v[I]), ...);
    return r;
  }
}

// The operands of `c ? a : b` as values: class objects in different address spaces (`c ? tg[i] : op.init`) have
// no common type in C++; in Metal both are copied.
template <class T> constexpr __M2V_F T value(T x) { return x; }

template <class... A> struct braced_list;
#define __M2V_BRACED(N, TPARAMS, MEMBERS, ARGS, INIT, VALUES)                                      \
  template <TPARAMS> struct braced_list<ARGS> {                                                    \
    MEMBERS                                                                                        \
    template <class V, enable_if_t<shape<V>::is_vec && shape<V>::n == N, int> = 0>                 \
    __M2V_F operator V() const { return vec_ctor<V>(VALUES); }                                     \
    template <class T, enable_if_t<!shape<T>::is_vec, int> = 0, class = decltype(T{INIT})>         \
    __M2V_F operator T() const { return T{VALUES}; }                                               \
  };
#define __M2V_COMMA ,
__M2V_BRACED(2, class A0 __M2V_COMMA class A1, A0 a0; A1 a1;, A0 __M2V_COMMA A1,
             declval_<A0>() __M2V_COMMA declval_<A1>(), a0 __M2V_COMMA a1)
__M2V_BRACED(3, class A0 __M2V_COMMA class A1 __M2V_COMMA class A2, A0 a0; A1 a1; A2 a2;,
             A0 __M2V_COMMA A1 __M2V_COMMA A2,
             declval_<A0>() __M2V_COMMA declval_<A1>() __M2V_COMMA declval_<A2>(),
             a0 __M2V_COMMA a1 __M2V_COMMA a2)
__M2V_BRACED(4, class A0 __M2V_COMMA class A1 __M2V_COMMA class A2 __M2V_COMMA class A3,
             A0 a0; A1 a1; A2 a2; A3 a3;, A0 __M2V_COMMA A1 __M2V_COMMA A2 __M2V_COMMA A3,
             declval_<A0>() __M2V_COMMA declval_<A1>() __M2V_COMMA declval_<A2>() __M2V_COMMA declval_<A3>(),
             a0 __M2V_COMMA a1 __M2V_COMMA a2 __M2V_COMMA a3)
#undef __M2V_BRACED
#undef __M2V_COMMA
template <class... A> __M2V_F braced_list<A...> braced(A... a) { return {a...}; }
} // namespace __m2v
#endif
