// Post-rewrite test kernels: every metal_math / metal_common / metal_relational / metal_geometric function for
// float, half, bfloat, scalars and vectors.
#include <metal_stdlib>
using namespace metal;

template <class T> T all_math(T x, T y) {
  return exp(x) + exp2(x) + exp10(x) + log(x) + log2(x) + log10(x) + pow(x, y) + powr(x, y) + sqrt(x) + rsqrt(x) +
         sin(x) + cos(x) + tan(x) + sinpi(x) + cospi(x) + tanpi(x) + asin(x) + acos(x) + atan(x) + atan2(x, y) +
         sinh(x) + cosh(x) + tanh(x) + asinh(x) + acosh(x) + atanh(x) + __m2v::lib::erf(x) + __m2v::lib::erfc(x) + __m2v::lib::log1p(x) + __m2v::lib::expm1(x) + __metal_erf(x) + __metal_log1p(x) +
         floor(x) + ceil(x) + trunc(x) + round(x) + rint(x) + fract(x) + fma(x, y, x) + fmod(x, y) +
         __m2v::lib::remainder(x, y) + copysign(x, y) + fdim(x, y) + divide(x, y) + nextafter(x, y) + fmax(x, y) + fmin(x, y) +
         fmax3(x, y, x) + fmin3(x, y, x) + fmedian3(x, y, x) + fabs(x) + abs(x) + max(x, y) + min(x, y) +
         clamp(x, y, x) + saturate(x) + mix(x, y, x) + sign(x) + step(x, y) + smoothstep(x, y, x) +
         select(x, y, x < y) + fast::exp(x) + fast::divide(x, y) + precise::tanh(x) + precise::sqrt(x);
}
template <class T> T more_math(T x, T y) {
  T c, i;
  auto e = __m2v::cvt<__m2v::rebind_t<T, int>>(x);
  T r = sincos(x, c) + modf(x, i) + frexp(y, e) + ldexp(x, e);
  bool b1 = all(isnan(x)) || any(isinf(x) | isfinite(y) | signbit(x) | isnormal(x) | isordered(x, y) | isunordered(x, y));
  return r + c + i + (b1 ? x : y);
}
template <class T> T geom(T x, T y) {
  auto d = dot(x, y) + length(x) + length_squared(x) + distance(x, y) + distance_squared(x, y);
  return normalize(x) * d + reflect(x, y) + refract(x, y, 0.5f) + faceforward(x, y, x);
}

#define KERNEL __attribute__((annotate("m2v.kernel")))
#define BUF(n) __attribute__((annotate("m2v.buffer", n)))
#define GID __attribute__((annotate("m2v.builtin", "thread_position_in_grid")))

#define MATH_KERNEL(T)                                                                             \
  KERNEL void math_##T(device T *out BUF(0), const device T *in BUF(1), uint gid GID) {            \
    T x = in[gid], y = in[gid + 1];                                                                \
    out[gid] = all_math(x, y) + more_math(x, y);                                                   \
  }
MATH_KERNEL(float) MATH_KERNEL(half) MATH_KERNEL(bfloat)
MATH_KERNEL(float2) MATH_KERNEL(half3) MATH_KERNEL(bfloat4) MATH_KERNEL(float4)

KERNEL void geometric(device float3 *o3 BUF(0), device half4 *o4 BUF(1), device bfloat2 *o2 BUF(2), uint gid GID) {
  o3[gid] = geom(o3[gid], o3[gid + 1]) + cross(o3[gid], o3[gid + 2]);
  o4[gid] = geom(o4[gid], o4[gid + 1]);
  o2[gid] = geom(o2[gid], o2[gid + 1]);
}

// mixed argument types as they appear in real kernels
KERNEL void mixed(device float4 *o BUF(0), device half *h BUF(1), device int *i BUF(2), constant float &s BUF(3),
                  uint gid GID) {
  float4 v = o[gid];
  o[gid] = max(v, 0) + clamp(v, 0.0f, 1.0f) + mix(v, o[gid + 1], 0.25f) + select(v, 0.0f, v > s) +
           __m2v::vec_ctor<float4>(max(h[gid], 1.0f), min(i[gid], 3), abs(i[gid]), max(h[gid], h[gid + 1]));
  h[gid] = exp(h[gid]) * metal::precise::exp(h[gid]) + half(metal::fast::max(s, 2.0f));
  bool4 m = __m2v::vec_ctor<bool4>(v < 0.5f);
  i[gid] = all(v > 0.0f) + any(m) + all(m) + any(isnan(v)) + select(1, 2, m[0]) + as_type<int>(s) + as_type<int>(__m2v::vec_ctor<half2>(h[0], h[1]));
}
