// MODE: asm
// Rule: when 16 + 8*n > 128 bytes, the push-constant block holds the grid and ONE address (of the argument buffer);
// each buffer address is loaded from that argument buffer through a PhysicalStorageBuffer pointer.
#include <metal_stdlib>
using namespace metal;
kernel void spill(device float* b0 [[buffer(0)]], device float* b1 [[buffer(1)]], device float* b2 [[buffer(2)]],
                  device float* b3 [[buffer(3)]], device float* b4 [[buffer(4)]], device float* b5 [[buffer(5)]],
                  device float* b6 [[buffer(6)]], device float* b7 [[buffer(7)]], device float* b8 [[buffer(8)]],
                  device float* b9 [[buffer(9)]], device float* b10 [[buffer(10)]], device float* b11 [[buffer(11)]],
                  device float* b12 [[buffer(12)]], device float* b13 [[buffer(13)]], device float* b14 [[buffer(14)]],
                  uint i [[thread_position_in_grid]]) {
  b14[i] = b0[i] + b1[i] + b2[i] + b3[i] + b4[i] + b5[i] + b6[i] + b7[i] + b8[i] + b9[i] + b10[i] + b11[i] + b12[i] + b13[i];
}
// CHECK-DAG: OpDecorate %[[BLOCK:[_a-z0-9]+]] Block
// CHECK-DAG: OpMemberDecorate %[[BLOCK]] 1 Offset 16
// CHECK-NOT: OpMemberDecorate %[[BLOCK]] 2 Offset
// CHECK-DAG: %[[BLOCK]] = OpTypeStruct %v3uint %ulong{{$}}
// CHECK-LABEL: %main = OpFunction
// CHECK: OpConvertUToPtr %_ptr_PhysicalStorageBuffer_ulong
// CHECK: OpLoad %ulong %{{[0-9]+}} Aligned 8
// CHECK: OpFunctionEnd
