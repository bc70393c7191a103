// metal2vk metal_stdlib: Metal vector constructors. The rewriter turns `float4(a, b2)`, `vec<T,N>(...)` and
// `static_cast<half4>(v)` into __m2v::vec_ctor<float4>(a, b2) ...
//   - no argument: zero vector
//   - one scalar: converted to the element type and splatted
//   - one vector of the same length: converted element-wise (never a bit cast)
//   - otherwise: the components of the scalars and vectors, in order, which must add up to N
#ifndef __M2V_VEC_CTOR_H
#define __M2V_VEC_CTOR_H
#include "base.h"

namespace __m2v {
template <class V, class A> __M2V_F void vec_put(V &r, int &i, A a) {
  using E = typename shape<V>::elem;
  if constexpr (!shape<A>::is_vec) {
    r[i++] = cvt<E>(a);
  } else {
    value_t<A> v = a;
    constexpr int n = shape<A>::n;
    r[i] = cvt<E>(v[0]);
    r[i + 1] = cvt<E>(v[1]);
    if constexpr (n > 2) r[i + 2] = cvt<E>(v[2]);
    if constexpr (n > 3) r[i + 3] = cvt<E>(v[3]);
    i += n;
  }
}

template <class V, class... A> __M2V_F V vec_ctor(A... a) {
  if constexpr (!shape<V>::is_vec) {
    // an alias the rewriter took for a vector type (`using T = ...; T(a, b)`) that is not one
    return V(a...);
  } else {
  static_assert(((shape<A>::ok) && ...), "vec_ctor: arguments must be scalars or vectors");
  using E = typename shape<V>::elem;
  constexpr int n = shape<V>::n;
  if constexpr (sizeof...(A) == 0) {
    return (V)static_cast<E>(0);
  } else if constexpr (sizeof...(A) == 1 && (!shape<A>::is_vec && ...)) {
    return cvt<V>(a...);
  } else if constexpr (sizeof...(A) == 1 && ((shape<A>::n == n) && ...)) {
    return cvt<V>(a...);
  } else {
    static_assert((shape<A>::n + ...) == n, "vec_ctor: components do not add up to the vector length");
    V r = (V)static_cast<E>(0);
    int i = 0;
    (vec_put(r, i, a), ...);
    return r;
  }
  }
}
} // namespace __m2v
#endif
