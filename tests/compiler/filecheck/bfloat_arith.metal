// MODE: asm
// Rule: bfloat has no SPIR-V type: values are ushort bits; arithmetic widens to float (bits << 16, bitcast),
// computes in float, and narrows with round-to-nearest-even (add 0x7fff + lsb, NaN kept quiet with 0x400000),
// then >> 16.
#include <metal_stdlib>
using namespace metal;
kernel void bfloat_arith(device bfloat* b [[buffer(0)]], uint i [[thread_position_in_grid]]) {
  b[i] = b[i] * b[i + 1];
}
// CHECK-NOT: OpTypeFloat 16
// CHECK-LABEL: %main = OpFunction
// CHECK: OpLoad %ushort %{{[0-9]+}} Aligned 2
// CHECK: OpUConvert %uint
// CHECK: OpShiftLeftLogical %uint %{{[0-9]+}} %uint_16
// CHECK: OpBitcast %float
// CHECK: %[[P:[0-9]+]] = OpFMul %float
// CHECK: %[[BITS:[0-9]+]] = OpBitcast %uint %[[P]]
// CHECK: OpShiftRightLogical %uint %[[BITS]] %uint_16
// CHECK: OpBitwiseAnd %uint %{{[0-9]+}} %uint_1
// CHECK: OpIAdd %uint %{{[0-9]+}} %uint_32767
// CHECK: OpIsNan %bool %[[P]]
// CHECK: OpBitwiseOr %uint %[[BITS]] %uint_4194304
// CHECK: OpSelect %uint
// CHECK: OpShiftRightLogical %uint %{{[0-9]+}} %uint_16
// CHECK: OpUConvert %ushort
// CHECK: OpStore %{{[0-9]+}} %{{[0-9]+}} Aligned 2
