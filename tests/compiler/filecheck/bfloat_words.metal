// MODE: asm
// Rule (lower/BFloatWords.cpp): bfloat lanes loaded from a buffer and widened to float come from 32-bit words: a
// bfloat4 load aligned to 8 bytes is a load of two words, lane 2k of a word is the word shifted left by 16 and lane
// 2k + 1 the word masked with 0xffff0000 (one instruction each, not a 16-bit extract, a conversion and a shift).
#include <metal_stdlib>
using namespace metal;
kernel void bf4_dot(device const bfloat4* a [[buffer(0)]], device const bfloat4* b [[buffer(1)]],
                    device float* out [[buffer(2)]], uint i [[thread_position_in_grid]]) {
  out[i] = dot(float4(a[i]), float4(b[i]));
}
// CHECK-LABEL: %main = OpFunction
// CHECK-NOT: OpLoad %v4ushort
// CHECK: %[[W:[0-9]+]] = OpLoad %v2uint %{{[0-9]+}} Aligned 8
// CHECK-DAG: %[[E0:[0-9]+]] = OpCompositeExtract %uint %[[W]] 0
// CHECK-DAG: OpShiftLeftLogical %uint %[[E0]] %uint_16
// CHECK-DAG: OpBitwiseAnd %uint %[[E0]] %uint_4294901760
// CHECK-NOT: OpLoad %v4ushort
// CHECK: OpFunctionEnd
