// MODE: asm
// Rule: a precise float exp, exp2, exp10, log, log2, log10 or tanh whose result is only rounded to half (or only
// to bfloat) is computed as the 16-bit overload computes it: GLSL.std.450's Exp in float, within 1 ulp of the
// 16-bit result (lower/NarrowPreciseMath.cpp, metal_math's p16_*); MLX's bfloat spelling
// `static_cast<bfloat>(__metal_exp(static_cast<float>(x), precise))` included. A result also used as a float keeps
// the precise float routine (no Exp instruction).
#include <metal_stdlib>
using namespace metal;
kernel void to_half(device const float* x [[buffer(0)]], device half* o [[buffer(1)]], uint i [[thread_position_in_grid]]) {
  o[i] = half(exp(x[i]));
}
kernel void to_bfloat_mlx(device const bfloat* x [[buffer(0)]], device bfloat* o [[buffer(1)]],
                          uint i [[thread_position_in_grid]]) {
  o[i] = static_cast<bfloat>(__metal_exp(static_cast<float>(x[i]), __METAL_PRECISE_MATH__));
}
kernel void vector_to_half(device const float4* x [[buffer(0)]], device half4* o [[buffer(1)]],
                           uint i [[thread_position_in_grid]]) {
  o[i] = half4(exp(x[i]));
}
kernel void also_float(device const float* x [[buffer(0)]], device half* o [[buffer(1)]], device float* f [[buffer(2)]],
                       uint i [[thread_position_in_grid]]) {
  float e = exp(x[i]);
  o[i] = half(e);
  f[i] = e;
}
// The four kernels are four modules, in this order.
// CHECK: %[[G1:[0-9]+]] = OpExtInstImport "GLSL.std.450"
// CHECK: %main = OpFunction
// CHECK: OpExtInst %float %[[G1]] Exp
// CHECK: OpFConvert %half
// CHECK: OpFunctionEnd
// CHECK: %[[G2:[0-9]+]] = OpExtInstImport "GLSL.std.450"
// CHECK: %main = OpFunction
// CHECK: OpExtInst %float %[[G2]] Exp
// CHECK: OpFunctionEnd
// CHECK: %[[G3:[0-9]+]] = OpExtInstImport "GLSL.std.450"
// CHECK: %main = OpFunction
// CHECK: OpExtInst %v4float %[[G3]] Exp
// CHECK: OpFunctionEnd
// CHECK: %[[G4:[0-9]+]] = OpExtInstImport "GLSL.std.450"
// CHECK: %main = OpFunction
// CHECK-NOT: OpExtInst %float %[[G4]] Exp
// CHECK: OpFunctionEnd
