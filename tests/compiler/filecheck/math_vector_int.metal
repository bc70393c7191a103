// MODE: asm
// Rule: vector math maps to the same GLSL.std.450 instructions on vector types (fast::exp here: the precise one is
// computed lane by lane, precise_math.metal); integer helpers map to
// bit instructions (popcount -> OpBitCount, reverse_bits -> OpBitReverse, clz -> FindUMsb-based, min/max on ints ->
// SMin/UMax), clamp on floats -> NMin/NMax or FClamp.
#include <metal_stdlib>
using namespace metal;
kernel void math_vector_int(device float4* o [[buffer(0)]], device uint* u [[buffer(1)]], device int* s [[buffer(2)]],
                            uint i [[thread_position_in_grid]]) {
  float4 x = o[i];
  o[i] = fast::exp(x) + sqrt(abs(x)) + floor(x);
  u[i] = popcount(u[i]) + reverse_bits(u[i + 1]) + max(u[i + 2], 7u);
  s[i] = min(s[i], s[i + 1]);
}
// CHECK: %[[GLSL:[0-9]+]] = OpExtInstImport "GLSL.std.450"
// CHECK-LABEL: %main = OpFunction
// CHECK-DAG: OpExtInst %v4float %[[GLSL]] Exp
// CHECK-DAG: OpExtInst %v4float %[[GLSL]] FAbs
// CHECK-DAG: OpExtInst %v4float %[[GLSL]] Sqrt
// CHECK-DAG: OpExtInst %v4float %[[GLSL]] Floor
// CHECK-DAG: OpBitCount %uint
// CHECK-DAG: OpBitReverse %uint
// CHECK-DAG: OpExtInst %uint %[[GLSL]] UMax
// CHECK-DAG: OpExtInst %uint %[[GLSL]] SMin
