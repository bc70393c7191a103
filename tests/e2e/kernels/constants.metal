// Function constants: one kernel specialised several ways.
#include <metal_stdlib>
using namespace metal;

constant bool use_scale [[function_constant(0)]];
constant float scale [[function_constant(1)]];
constant int mode [[function_constant(2)]];
constant bool has_offset = is_function_constant_defined(scale);

// mode 0: y = x; mode 1: y = x * x; mode 2: y = -x. Then * scale when use_scale, + 10 when scale is defined at all.
kernel void fc_variants(device const float* x [[buffer(0)]], device float* y [[buffer(1)]],
                        uint i [[thread_position_in_grid]]) {
  float v = x[i];
  if (mode == 1) v = v * v;
  else if (mode == 2) v = -v;
  if (use_scale) v *= scale;
  if (has_offset) v += 10.0f;
  y[i] = v;
}

constant bool with_bias [[function_constant(3)]];

// An optional buffer argument guarded by a function constant.
kernel void fc_optional_buffer(device const float* x [[buffer(0)]], device float* y [[buffer(1)]],
                               device const float* bias [[buffer(2), function_constant(with_bias)]],
                               uint i [[thread_position_in_grid]]) {
  float v = x[i] * 3.0f;
  if (with_bias) v += bias[i];
  y[i] = v;
}
