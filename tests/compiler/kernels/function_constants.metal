// ENTRIES: function_constants
// Function constants of several types, is_function_constant_defined, a constant derived from others, and
// [[function_constant(name)]] guarded optional buffers.
#include <metal_stdlib>
using namespace metal;

constant bool has_bias [[function_constant(0)]];
constant bool has_residual [[function_constant(1)]];
constant int block_size [[function_constant(2)]];
constant float scale [[function_constant(3)]];
constant uint mode [[function_constant(4)]];
constant half hscale [[function_constant(5)]];
constant bool use_scale = is_function_constant_defined(scale);
constant int bs = is_function_constant_defined(block_size) ? block_size : 64;

kernel void function_constants(device const float* x [[buffer(0)]], device float* y [[buffer(1)]],
                               device const float* bias [[buffer(2), function_constant(has_bias)]],
                               device const float* residual [[buffer(3), function_constant(has_residual)]],
                               uint gid [[thread_position_in_grid]]) {
  float v = x[gid];
  if (use_scale) v *= scale;
  if (has_bias) v += bias[gid % bs];
  if (has_residual) v += residual[gid];
  switch (mode) {
    case 1: v = max(v, 0.0f); break;
    case 2: v = tanh(v); break;
    default: break;
  }
  if (is_function_constant_defined(hscale)) v *= float(hscale);
  y[gid] = v;
}
