// ENTRIES: gelu_erf gelu_tanh silu swiglu
// Activation functions as elementwise kernels (erf GELU, tanh GELU, SiLU, SwiGLU with half I/O).
#include <metal_stdlib>
using namespace metal;

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
