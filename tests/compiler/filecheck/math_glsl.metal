// MODE: asm
// ARGS: -ffast-math
// Rule: with -ffast-math, metal:: math functions with a GLSL.std.450 counterpart become OpExtInst of that
// instruction (fmin/fmax/min/max on floats -> NMin/NMax: IEEE minNum/maxNum). Without it, the transcendental ones
// are Metal's precise functions (precise_math.metal).
#include <metal_stdlib>
using namespace metal;
kernel void math_glsl(device float* o [[buffer(0)]], uint i [[thread_position_in_grid]]) {
  float x = o[i];
  o[i] = exp(x) + exp2(x) + log(x) + log2(x) + sqrt(x) + rsqrt(x) + sin(x) + cos(x) + tan(x) + tanh(x) +
         fma(x, x, 1.0f) + fmin(x, 2.0f) + fmax(x, 3.0f) + floor(x) + ceil(x) + trunc(x) + abs(x) + pow(x, 2.5f) +
         atan2(x, 1.5f) + rint(x);
}
// CHECK: %[[GLSL:[0-9]+]] = OpExtInstImport "GLSL.std.450"
// CHECK-LABEL: %main = OpFunction
// CHECK: OpExtInst %float %[[GLSL]] Exp
// CHECK: OpExtInst %float %[[GLSL]] Exp2
// CHECK: OpExtInst %float %[[GLSL]] Log
// CHECK: OpExtInst %float %[[GLSL]] Log2
// CHECK: OpExtInst %float %[[GLSL]] Sqrt
// CHECK: OpExtInst %float %[[GLSL]] InverseSqrt
// CHECK: OpExtInst %float %[[GLSL]] Sin
// CHECK: OpExtInst %float %[[GLSL]] Cos
// CHECK: OpExtInst %float %[[GLSL]] Tan
// CHECK-DAG: OpExtInst %float %[[GLSL]] Tanh
// CHECK-DAG: OpExtInst %float %[[GLSL]] Fma
// CHECK-DAG: OpExtInst %float %[[GLSL]] NMin
// CHECK-DAG: OpExtInst %float %[[GLSL]] NMax
// CHECK-DAG: OpExtInst %float %[[GLSL]] Floor
// CHECK-DAG: OpExtInst %float %[[GLSL]] Ceil
// CHECK-DAG: OpExtInst %float %[[GLSL]] Trunc
// CHECK-DAG: OpExtInst %float %[[GLSL]] FAbs
// CHECK-DAG: OpExtInst %float %[[GLSL]] Pow
// CHECK-DAG: OpExtInst %float %[[GLSL]] Atan2
// CHECK-DAG: OpExtInst %float %[[GLSL]] RoundEven
