// What code written for Apple's metal_stdlib defines or names itself: functions Apple's library does not have
// (erf, erfc, log1p, expm1, remainder: a kernel defines its own, which must not collide with anything of ours), a
// specialization of the library's _numeric_limits_impl for a type of its own, and __is_valid_simdgroup_type.
#include <metal_stdlib>
using namespace metal;

// |x| < 1: x P(x^2); above: 1 - exp(-x^2) Q(1/|x|) with the sign of x.
float erf(float x) {
  float a = fabs(x);
  if (a < 1.0f) {
    float t = x * x;
    float p = 0.00007875875063f;
    p = p * t - 0.0008016864287f;
    p = p * t + 0.005189087423f;
    p = p * t - 0.02685421201f;
    p = p * t + 0.1128359472f;
    p = p * t - 0.3761262667f;
    p = p * t + 1.128379166f;
    return x * p;
  }
  float u = 1.0f / min(a, 10.0f);
  float q = -0.05241935977f;
  q = q * u + 0.3511085382f;
  q = q * u - 1.04201353f;
  q = q * u + 1.782212467f;
  q = q * u - 1.878593799f;
  q = q * u + 1.133599659f;
  q = q * u - 0.1735889462f;
  q = q * u - 0.2542425267f;
  q = q * u - 0.002828493931f;
  q = q * u + 0.5643536829f;
  q = q * u - 4.117937486e-6f;
  return copysign(a >= 10.0f ? 1.0f : 1.0f - exp(-a * a) * q, x);
}
// templates of the same names, called with half
template <typename T> float erfc(T x) { return 1.0f - erf(float(x)); }
template <typename T> float log1p(T x) {
  float u = 1.0f + float(x);  // log(u) * x / (u - 1): exact where 1 + x rounds
  return u == 1.0f ? float(x) : log(u) * float(x) / (u - 1.0f);
}
inline float expm1(float x) { return fabs(x) < 1e-5f ? x + 0.5f * x * x : exp(x) - 1.0f; }
inline float remainder(float x, float y) { return x - y * rint(x / y); }

// y = erf(x) + erfc(h) + log1p(h) + expm1(x / 4) + remainder(x, 1.5)
kernel void user_math(device const float* x [[buffer(0)]], device const half* h [[buffer(1)]],
                      device float* y [[buffer(2)]], uint i [[thread_position_in_grid]]) {
  float v = x[i];
  y[i] = erf(v) + erfc(h[i]) + log1p(h[i]) + expm1(v / 4.0f) + remainder(v, 1.5f);
}

struct score {
  float value;
  uint index;
};
namespace metal {
template <> struct _numeric_limits_impl<score> {
  static constexpr bool is_specialized = true;
  static constexpr score lowest() { return score{-3.0f, 0}; }
  static constexpr score max() { return score{7.0f, 1}; }
};
}  // namespace metal

template <typename T> constexpr constant bool simd_ok = __is_valid_simdgroup_type<T>::value;

// out = [flags of simd_ok for float, half, int4, long, score (bits 0..4), lowest, max, numeric_limits<half>::max()]
kernel void user_traits(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
  if (i != 0) return;
  uint flags = (simd_ok<float> ? 1u : 0u) | (simd_ok<half> ? 2u : 0u) | (simd_ok<int4> ? 4u : 0u) |
               (simd_ok<long> ? 8u : 0u) | (simd_ok<score> ? 16u : 0u);
  out[0] = float(flags);
  out[1] = numeric_limits<score>::lowest().value;
  out[2] = numeric_limits<score>::max().value + float(numeric_limits<score>::max().index);
  out[3] = float(numeric_limits<half>::max()) + (numeric_limits<score>::is_specialized ? 1.0f : 0.0f);
}
