// MODE: asm
// Rule: without -ffast-math (Metal's precise math, as MLX compiles its library), metal:: and metal::precise::
// transcendental functions are computed by the headers' precise code, never by GLSL.std.450's Sin, Cos, Tan, Asin,
// Acos, Atan, Atan2, Exp, Exp2, Log, Log2, Pow, Sinh, Cosh, Tanh (Vulkan's precision for those is far from Metal's
// precise bounds); metal::fast:: keeps the GLSL.std.450 instruction.
#include <metal_stdlib>
using namespace metal;
kernel void precise_default(device float* o [[buffer(0)]], uint i [[thread_position_in_grid]]) {
  float x = o[i];
  o[i] = sin(x) + cos(x) + tan(x) + asin(x) + acos(x) + atan(x) + atan2(x, 2.0f) + exp(x) + exp2(x) + log(x) +
         log2(x) + pow(x, 2.5f) + sinh(x) + cosh(x) + tanh(x) + precise::sin(x);
}
kernel void fast_namespace(device float* o [[buffer(0)]], uint i [[thread_position_in_grid]]) {
  o[i] = fast::sin(o[i]);
}
// The two kernels are two modules, in this order.
// CHECK: %[[GLSL:[0-9]+]] = OpExtInstImport "GLSL.std.450"
// CHECK: %main = OpFunction
// CHECK-NOT: OpExtInst %float %[[GLSL]] {{Sin|Cos|Tan|Asin|Acos|Atan|Atan2|Exp|Exp2|Log|Log2|Pow|Sinh|Cosh|Tanh}}
// CHECK: OpFunctionEnd
// CHECK: %[[GLSL2:[0-9]+]] = OpExtInstImport "GLSL.std.450"
// CHECK: %main = OpFunction
// CHECK: OpExtInst %float %[[GLSL2]] Sin
// CHECK: OpFunctionEnd
