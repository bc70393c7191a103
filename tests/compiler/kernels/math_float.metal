// ENTRIES: math_float
// metal:: math library on float: transcendental, rounding, min/max/clamp, mix/step/smoothstep, select, classification.
#include <metal_stdlib>
using namespace metal;

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
