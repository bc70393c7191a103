// ENTRIES: gelu_erf gelu_tanh silu swiglu
// Activation functions as elementwise kernels (erf GELU, tanh GELU, SiLU, SwiGLU with half I/O).
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

kernel void gelu_erf(device const float* x [[buffer(0)]], device float* y [[buffer(1)]], uint i [[thread_position_in_grid]]) {
  float v = x[i];
  y[i] = 0.5f * v * (1.0f + erf(v * M_SQRT1_2_F));
}
kernel void gelu_tanh(device const half* x [[buffer(0)]], device half* y [[buffer(1)]], uint i [[thread_position_in_grid]]) {
  float v = float(x[i]);
  y[i] = half(0.5f * v * (1.0f + precise::tanh(0.7978845608f * (v + 0.044715f * v * v * v))));
}
kernel void silu(device const float4* x [[buffer(0)]], device float4* y [[buffer(1)]], uint i [[thread_position_in_grid]]) {
  float4 v = x[i];
  y[i] = v / (1.0f + exp(-v));
}
kernel void swiglu(device const half* gate [[buffer(0)]], device const half* up [[buffer(1)]], device half* y [[buffer(2)]],
                   constant uint& n [[buffer(3)]], uint i [[thread_position_in_grid]]) {
  if (i >= n) return;
  float g = float(gate[i]);
  y[i] = half(g / (1.0f + fast::exp(-g)) * float(up[i]));
}
