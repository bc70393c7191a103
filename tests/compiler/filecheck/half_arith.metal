// MODE: asm
// Rule: half arithmetic stays in 16-bit floats (Float16 capability, OpTypeFloat 16, 16-bit storage access,
// Aligned 2), and a*b+c contracts to GLSL Fma on half.
#include <metal_stdlib>
using namespace metal;
kernel void half_arith(device half* h [[buffer(0)]], uint i [[thread_position_in_grid]]) {
  half a = h[i], b = h[i + 1];
  h[i] = a * b + half(1.5h);
  h[i + 1] = a / b - b;
}
// CHECK-DAG: OpCapability Float16
// CHECK-DAG: OpCapability StorageBuffer16BitAccess
// CHECK-DAG: %half = OpTypeFloat 16
// CHECK-LABEL: %main = OpFunction
// CHECK: OpLoad %half %{{[0-9]+}} Aligned 2
// CHECK: OpLoad %half %{{[0-9]+}} Aligned 2
// CHECK: OpExtInst %half %{{[0-9]+}} Fma
// CHECK: OpStore %{{[0-9]+}} %{{[0-9]+}} Aligned 2
// CHECK: OpFDiv %half
// CHECK: OpFSub %half
