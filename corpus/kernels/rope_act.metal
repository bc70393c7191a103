// Rotary position embedding (traditional: adjacent pairs; half-split: (i, i + D/2) pairs) and gated MLP activations.
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

// x: [tokens, heads, D]; position of token t = offset + t; theta_i = base^(-2i/D).
template <typename T, bool traditional>
[[kernel]] void rope(const device T* x [[buffer(0)]], device T* out [[buffer(1)]],
                     constant int& offset [[buffer(2)]], constant float& base [[buffer(3)]],
                     constant int3& dims [[buffer(4)]],  // tokens, heads, D
                     uint3 pos [[thread_position_in_grid]]) {
  // pos.x: pair index in [0, D/2), pos.y: head, pos.z: token
  int D = dims.z;
  uint i = pos.x;
  float inv_freq = exp2(-2.0f * float(i) / float(D) * log2(base));
  float theta = float(offset + int(pos.z)) * inv_freq;
  float c = cos(theta), s = sin(theta);
  size_t row = (size_t(pos.z) * dims.y + pos.y) * D;
  uint i1 = traditional ? 2 * i : i;
  uint i2 = traditional ? 2 * i + 1 : i + D / 2;
  float a = static_cast<float>(x[row + i1]), b = static_cast<float>(x[row + i2]);
  out[row + i1] = static_cast<T>(a * c - b * s);
  out[row + i2] = static_cast<T>(a * s + b * c);
}

// h = act(gate) * up, gate and up interleaved in halves of one [rows, 2*H] input (as a fused gate_up projection).
template <typename T, int ACT>
[[kernel]] void gated_act(const device T* gate_up [[buffer(0)]], device T* out [[buffer(1)]],
                          constant uint& hidden [[buffer(2)]], uint2 pos [[thread_position_in_grid]]) {
  size_t row = pos.y;
  float g = static_cast<float>(gate_up[row * 2 * hidden + pos.x]);
  float u = static_cast<float>(gate_up[row * 2 * hidden + hidden + pos.x]);
  float a;
  if (ACT == 0) {
    a = g / (1.0f + exp(-g));  // SiLU
  } else if (ACT == 1) {
    a = 0.5f * g * (1.0f + erf(g * M_SQRT1_2_F));  // GELU (erf)
  } else {
    a = 0.5f * g * (1.0f + precise::tanh(0.7978845608f * (g + 0.044715f * g * g * g)));  // GELU (tanh approx)
  }
  out[row * hidden + pos.x] = static_cast<T>(a * u);
}

#define instantiate_rope(tname, T) \
  template [[host_name("rope_traditional_" #tname)]] [[kernel]] decltype(rope<T, true>) rope<T, true>; \
  template [[host_name("rope_split_" #tname)]] [[kernel]] decltype(rope<T, false>) rope<T, false>;
#define instantiate_act(tname, T) \
  template [[host_name("silu_mul_" #tname)]] [[kernel]] decltype(gated_act<T, 0>) gated_act<T, 0>; \
  template [[host_name("gelu_mul_" #tname)]] [[kernel]] decltype(gated_act<T, 1>) gated_act<T, 1>; \
  template [[host_name("gelu_tanh_mul_" #tname)]] [[kernel]] decltype(gated_act<T, 2>) gated_act<T, 2>;

instantiate_rope(float, float)
instantiate_rope(half, half)
instantiate_rope(bfloat, bfloat)
instantiate_act(float, float)
instantiate_act(half, half)
instantiate_act(bfloat, bfloat)
