// Metal's precise math (the default: kernels here are compiled without -ffast-math), one kernel per function:
// out[i] = f(x[i]) or f(x[i], y[i]). The test (e2e_tests.cpp, "Precise math") sweeps inputs over the whole float
// range and compares with a double-precision reference and the ULP bounds of Metal's precise math.
// Written for metal2vk's e2e tests.
#include <metal_stdlib>
using namespace metal;

#define UNARY(NAME, EXPR)                                                                          \
  kernel void pm_##NAME(device const float* x [[buffer(0)]], device const float* y [[buffer(1)]],  \
                        device float* out [[buffer(2)]], constant uint& n [[buffer(3)]],           \
                        uint i [[thread_position_in_grid]]) {                                      \
    if (i >= n) return;                                                                            \
    float a = x[i], b = y[i];                                                                      \
    (void)b;                                                                                       \
    out[i] = EXPR;                                                                                 \
  }

UNARY(sin, sin(a))
UNARY(cos, cos(a))
UNARY(tan, tan(a))
UNARY(sincos_sin, sincos(a, b))
UNARY(sincos_cos, (sincos(a, b), b))
UNARY(asin, asin(a))
UNARY(acos, acos(a))
UNARY(atan, atan(a))
UNARY(atan2, atan2(a, b))
UNARY(sinh, sinh(a))
UNARY(cosh, cosh(a))
UNARY(tanh, tanh(a))
UNARY(asinh, asinh(a))
UNARY(acosh, acosh(a))
UNARY(atanh, atanh(a))
UNARY(exp, exp(a))
UNARY(exp2, exp2(a))
UNARY(exp10, exp10(a))
UNARY(log, log(a))
UNARY(log2, log2(a))
UNARY(log10, log10(a))
UNARY(pow, pow(a, b))
UNARY(powr, powr(a, b))
UNARY(sinpi, sinpi(a))
UNARY(cospi, cospi(a))
UNARY(tanpi, tanpi(a))
// explicit namespaces and vectors: precise:: as MLX's unary ops call it, a float4 lane by lane
UNARY(precise_sin, precise::sin(a))
UNARY(vec_sin, sin(float4(a, b, a * 0.5f, 1.0f)).x)
// half computes in float and rounds once
kernel void pm_half_sin(device const half* x [[buffer(0)]], device half* out [[buffer(1)]],
                        uint i [[thread_position_in_grid]]) {
  out[i] = sin(x[i]);
}
// 16-bit results (half and bfloat compute in float and round once): one thread per bit pattern, the test feeds all
// 65,536 of them; the 4-wide kernels take the same inputs four at a time (the vector overloads)
#define UNARY16(NAME, T)                                                                           \
  kernel void pm16_##NAME##_##T(device const T* x [[buffer(0)]], device T* out [[buffer(1)]],      \
                                uint i [[thread_position_in_grid]]) {                              \
    out[i] = precise::NAME(x[i]);                                                                  \
  }                                                                                                \
  kernel void pm16_##NAME##_##T##4(device const T##4* x [[buffer(0)]], device T##4* out [[buffer(1)]], \
                                   uint i [[thread_position_in_grid]]) {                           \
    out[i] = NAME(x[i]);                                                                           \
  }
#define UNARY16_BOTH(NAME) UNARY16(NAME, half) UNARY16(NAME, bfloat)
UNARY16_BOTH(exp)
UNARY16_BOTH(exp2)
UNARY16_BOTH(exp10)
UNARY16_BOTH(log)
UNARY16_BOTH(log2)
UNARY16_BOTH(log10)
UNARY16_BOTH(tanh)
// float functions whose result is only rounded to half or bfloat (they may take the 16-bit evaluation); the bfloat
// ones spelled as MLX's bf16_math.h does
#define UNARY_F16(NAME)                                                                            \
  kernel void pm16f_##NAME##_half(device const float* x [[buffer(0)]], device half* out [[buffer(1)]], \
                                  uint i [[thread_position_in_grid]]) {                            \
    out[i] = half(NAME(x[i]));                                                                     \
  }                                                                                                \
  kernel void pm16f_##NAME##_bfloat(device const float* x [[buffer(0)]], device bfloat* out [[buffer(1)]], \
                                    uint i [[thread_position_in_grid]]) {                          \
    out[i] = static_cast<bfloat>(__metal_##NAME(static_cast<float>(x[i]), __METAL_PRECISE_MATH__)); \
  }
UNARY_F16(exp)
UNARY_F16(exp2)
UNARY_F16(exp10)
UNARY_F16(log)
UNARY_F16(log2)
UNARY_F16(log10)
UNARY_F16(tanh)
