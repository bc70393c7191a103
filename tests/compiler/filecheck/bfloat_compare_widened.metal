// MODE: asm
// Rule (lower/BFloatWords.cpp, step 2): a comparison of bfloats compares their widened floats, so a bfloat constant
// operand is a float constant (not a 16-bit constant widened in the module) and each compared lane is widened once.
#include <metal_stdlib>
using namespace metal;
kernel void clamp_bf(device const bfloat2* in [[buffer(0)]], device float2* out [[buffer(1)]],
                     uint i [[thread_position_in_grid]]) {
  bfloat2 x = in[i];
  out[i] = float2(x.x < bfloat(-2) ? 0.0f : 1.0f, x.y >= bfloat(0.5) ? 2.0f : 3.0f);
}
// CHECK-LABEL: %main = OpFunction
// CHECK-NOT: OpUConvert %uint %ushort_
// CHECK: %[[A:[0-9]+]] = OpShiftLeftLogical %uint %{{[0-9]+}} %uint_16
// CHECK-NEXT: %[[FA:[0-9]+]] = OpBitcast %float %[[A]]
// CHECK-NEXT: OpFOrdLessThan %bool %[[FA]] %float_n2
// CHECK-NOT: OpUConvert %uint %ushort_
// CHECK: OpFOrdGreaterThanEqual %bool %{{[0-9]+}} %float_0_5
// CHECK-NOT: OpUConvert %uint %ushort_
// CHECK: OpFunctionEnd
