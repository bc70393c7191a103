// MODE: asm
// Rule (stdlib metal_math, p16_exp_range_): a precise exp of a bfloat is Exp in float of the argument clamped to
// [-104, 88.7219] (NMax, NMin: the results at the bounds round to bfloat's 0 and inf, and NMax returns the bound for
// a NaN), after which one select keeps a NaN argument: its own bits. Exp of a clamped value is never a NaN, so its
// rounding has no NaN test (the emitter's rule, bfloat_rounding_never_nan).
#include <metal_stdlib>
using namespace metal;
kernel void exp_bf(device const bfloat* x [[buffer(0)]], device bfloat* o [[buffer(1)]],
                   uint i [[thread_position_in_grid]]) {
  o[i] = precise::exp(x[i]);
}
// CHECK-LABEL: %main = OpFunction
// CHECK: %[[BF:[0-9]+]] = OpLoad %ushort
// CHECK: %[[X:[0-9]+]] = OpBitcast %float
// CHECK-NEXT: %[[LO:[0-9]+]] = OpExtInst %float %{{[0-9]+}} NMax %[[X]] %float_n104
// CHECK-NEXT: %[[HI:[0-9]+]] = OpExtInst %float %{{[0-9]+}} NMin %[[LO]] %float_88_7219
// CHECK-NEXT: %[[E:[0-9]+]] = OpExtInst %float %{{[0-9]+}} Exp %[[HI]]
// CHECK-NEXT: %[[NAN:[0-9]+]] = OpIsNan %bool %[[X]]
// CHECK: %[[BITS:[0-9]+]] = OpBitcast %uint %[[E]]
// CHECK-NEXT: %[[S:[0-9]+]] = OpShiftRightLogical %uint %[[BITS]] %uint_16
// CHECK-NEXT: %[[LSB:[0-9]+]] = OpBitwiseAnd %uint %[[S]] %uint_1
// CHECK-NEXT: %[[BIAS:[0-9]+]] = OpIAdd %uint %[[LSB]] %uint_32767
// CHECK-NEXT: %[[W:[0-9]+]] = OpIAdd %uint %[[BITS]] %[[BIAS]]
// CHECK-NEXT: %[[TOP:[0-9]+]] = OpShiftRightLogical %uint %[[W]] %uint_16
// CHECK-NEXT: %[[R:[0-9]+]] = OpUConvert %ushort %[[TOP]]
// CHECK-NEXT: %[[OUT:[0-9]+]] = OpSelect %ushort %{{[0-9]+}} %[[BF]] %[[R]]
// CHECK-NOT: OpIsNan
// CHECK: OpStore %{{[0-9]+}} %[[OUT]] Aligned 2
// CHECK: OpFunctionEnd
