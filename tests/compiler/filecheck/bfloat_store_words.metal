// MODE: asm
// Rule (lower/BFloatWords.cpp, step 4): bfloat pairs narrowed from float and stored to a buffer aligned to 4 bytes or
// more are stored as 32-bit words. Each lane is rounded as a word holding it in its high half (round to nearest even,
// NaNs made quiet, no shift down); selects among narrowings, constants and loaded lanes choose between words; a stored
// word is its odd lane's high half or'ed with its even lane's shifted down. No lane is converted to 16 bits and no
// 16-bit vector is rebuilt. Here: a whole float4 narrowed (vector rounding, pairs by shuffles) and two lanes each
// chosen by a select (bfloat arithmetic, a loaded lane, a constant).
#include <metal_stdlib>
using namespace metal;
kernel void store_words(device const float4* in4 [[buffer(0)]], device const bfloat2* in2 [[buffer(1)]],
                        device bfloat4* out4 [[buffer(2)]], device bfloat2* out2 [[buffer(3)]],
                        uint i [[thread_position_in_grid]]) {
  out4[i] = bfloat4(in4[i] * 3.0f);
  bfloat2 x = in2[i];
  bfloat2 y;
  y.x = x.x > bfloat(0) ? bfloat(float(x.x) * 0.5f) : x.x;
  y.y = isnan(x.y) ? bfloat(1) : bfloat(float(x.y) + 1.0f);
  out2[i] = y;
}
// CHECK-LABEL: %main = OpFunction
// CHECK-NOT: OpUConvert %ushort
// CHECK: %[[BITS:[0-9]+]] = OpBitcast %v4uint %{{[0-9]+}}
// CHECK: OpIAdd %v4uint %[[BITS]]
// CHECK: OpIsNan %v4bool
// CHECK: %[[R:[0-9]+]] = OpSelect %v4uint
// CHECK-DAG: %[[ODD:[0-9]+]] = OpVectorShuffle %v2uint %[[R]] %{{[0-9]+}} 1 3
// CHECK-DAG: %[[EVEN:[0-9]+]] = OpVectorShuffle %v2uint %[[R]] %{{[0-9]+}} 0 2
// CHECK-DAG: %[[LO:[0-9]+]] = OpShiftRightLogical %v2uint %[[EVEN]]
// CHECK-DAG: %[[HI:[0-9]+]] = OpBitwiseAnd %v2uint %[[ODD]]
// CHECK: %[[W4:[0-9]+]] = OpBitwiseOr %v2uint %[[HI]] %[[LO]]
// CHECK: OpStore %{{[0-9]+}} %[[W4]] Aligned 8
// CHECK-NOT: OpUConvert %ushort
// CHECK: %[[X:[0-9]+]] = OpLoad %uint %{{[0-9]+}} Aligned 4
// CHECK: %[[HALF:[0-9]+]] = OpFMul %float
// CHECK: %[[ONE:[0-9]+]] = OpFAdd %float
// CHECK: OpIsNan %bool %[[HALF]]
// CHECK: %[[R0:[0-9]+]] = OpSelect %uint
// CHECK: %[[X0:[0-9]+]] = OpShiftLeftLogical %uint %[[X]] %uint_16
// CHECK: %[[L0:[0-9]+]] = OpSelect %uint %{{[0-9]+}} %[[R0]] %[[X0]]
// CHECK: OpIsNan %bool %[[ONE]]
// CHECK: %[[R1:[0-9]+]] = OpSelect %uint
// CHECK: %[[L1:[0-9]+]] = OpSelect %uint %{{[0-9]+}} %uint_1065353216 %[[R1]]
// CHECK-DAG: %[[LO2:[0-9]+]] = OpShiftRightLogical %uint %[[L0]] %uint_16
// CHECK-DAG: %[[HI2:[0-9]+]] = OpBitwiseAnd %uint %[[L1]] %uint_4294901760
// CHECK: %[[W2:[0-9]+]] = OpBitwiseOr %uint %[[HI2]] %[[LO2]]
// CHECK: OpStore %{{[0-9]+}} %[[W2]] Aligned 4
// CHECK-NOT: OpUConvert %ushort
// CHECK: OpFunctionEnd
