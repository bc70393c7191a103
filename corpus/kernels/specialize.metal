// Function-constant specialization (MLX style: `constant bool has_bias [[function_constant(0)]]`), including an
// optional buffer guarded by a function constant, an int constant used as a loop bound, and a float constant.
#include <metal_stdlib>
using namespace metal;

constant bool has_bias [[function_constant(0)]];
constant bool apply_relu [[function_constant(1)]];
constant int unroll [[function_constant(2)]];
constant float alpha [[function_constant(3)]];
constant bool has_alpha = is_function_constant_defined(alpha);

// y = act(alpha * (x W^T) + b), W: [out, in]; one thread per output element.
[[kernel]] void linear_fc(const device float* x [[buffer(0)]], const device float* w [[buffer(1)]],
                          const device float* bias [[buffer(2), function_constant(has_bias)]],
                          device float* y [[buffer(3)]], constant int2& dims [[buffer(4)]],  // in, out
                          uint2 pos [[thread_position_in_grid]]) {
  int in = dims.x, out = dims.y;
  uint o = pos.x, row = pos.y;
  float acc = 0;
  for (int i = 0; i < in; i += unroll)
    for (int u = 0; u < unroll; ++u) acc += x[row * in + i + u] * w[o * in + i + u];
  if (has_alpha) acc *= alpha;
  if (has_bias) acc += bias[o];
  if (apply_relu) acc = max(acc, 0.0f);
  y[row * out + o] = acc;
}

// is_function_constant_defined used directly in the body (rather than through a program-scope bool).
constant float gain [[function_constant(4)]];
[[kernel]] void scale_optional_gain(const device float* x [[buffer(0)]], device float* y [[buffer(1)]],
                                    uint i [[thread_position_in_grid]]) {
  float v = x[i];
  if (is_function_constant_defined(gain)) v *= gain;
  y[i] = v;
}
