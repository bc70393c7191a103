// ENTRIES: math_float
// metal:: math library on float: transcendental, rounding, min/max/clamp, mix/step/smoothstep, select, classification.
#include <metal_stdlib>
using namespace metal;

// Apple's metal_stdlib has no erf: Metal code that needs one defines it (as MLX does). |x| < 1: x P(x^2);
// above: 1 - exp(-x^2) Q(1/|x|), with the sign of x; 1 from |x| = 10 on.
inline float erf(float x) {
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
  float r = a >= 10.0f ? 1.0f : 1.0f - exp(-a * a) * q;
  return copysign(r, x);
}

kernel void math_float(device const float* in [[buffer(0)]], device float* out [[buffer(1)]],
                       device bool* cls [[buffer(2)]], uint gid [[thread_position_in_grid]]) {
  float x = in[gid];
  float r = 0.0f;
  r += exp(x) + exp2(x) + log(abs(x) + 1.0f) + log2(abs(x) + 1.0f) + log10(abs(x) + 1.0f);
  r += pow(abs(x), 1.5f) + powr(abs(x), 0.5f) + sqrt(abs(x)) + rsqrt(abs(x) + 1.0f);
  r += sin(x) + cos(x) + tan(x) + tanh(x) + sinh(x) + cosh(x) + asin(clamp(x, -1.0f, 1.0f)) + atan(x) + atan2(x, 2.0f);
  r += erf(x) + fma(x, 2.0f, 1.0f) + fmin(x, 1.0f) + fmax(x, -1.0f) + min(x, 0.0f) + max(x, 0.0f);
  r += clamp(x, -2.0f, 2.0f) + abs(x) + fabs(x) + floor(x) + ceil(x) + round(x) + trunc(x) + rint(x) + fract(x);
  r += mix(x, 1.0f, 0.25f) + step(0.0f, x) + smoothstep(-1.0f, 1.0f, x) + select(x, -x, x < 0.0f);
  r += copysign(1.0f, x) + sign(x) + fmod(x, 3.0f) + saturate(x) + exp10(x * 0.1f) + sinpi(x) + cospi(x) + fmax3(x, 1.0f, -1.0f) + median3(x, 0.0f, 1.0f);
  float ip;
  r += modf(x, ip) + ip + ldexp(1.0f, 3) + fdim(x, 1.0f);
  out[gid] = r;
  cls[gid] = isnan(r) || isinf(r) || !isfinite(x) || signbit(x) || isnormal(x);
}
