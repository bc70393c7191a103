// MODE: asm
// Rule: every [[buffer(n)]] parameter (pointer or constant reference) is a 64-bit device address in the push-constant
// block at offset 16 + 8*i after the uint3 grid; each access converts it with OpConvertUToPtr to a
// PhysicalStorageBuffer pointer and carries an Aligned memory operand.
#include <metal_stdlib>
using namespace metal;
kernel void buffer_args(device const float* a [[buffer(0)]], device float* b [[buffer(1)]],
                        constant uint& n [[buffer(2)]], uint gid [[thread_position_in_grid]]) {
  if (gid < n) b[gid] = a[gid] * 2.0f;
}
// CHECK-DAG: OpCapability PhysicalStorageBufferAddresses
// CHECK-DAG: OpMemoryModel PhysicalStorageBuffer64 GLSL450
// CHECK-DAG: OpDecorate %[[BLOCK:[_a-z0-9]+]] Block
// CHECK-DAG: OpMemberDecorate %[[BLOCK]] 0 Offset 0
// CHECK-DAG: OpMemberDecorate %[[BLOCK]] 1 Offset 16
// CHECK-DAG: OpMemberDecorate %[[BLOCK]] 2 Offset 24
// CHECK-DAG: OpMemberDecorate %[[BLOCK]] 3 Offset 32
// CHECK-DAG: %[[BLOCK]] = OpTypeStruct %v3uint %ulong %ulong %ulong
// CHECK-DAG: %{{.*}} = OpVariable %{{.*}} PushConstant
// CHECK-LABEL: %main = OpFunction
// CHECK: OpConvertUToPtr %_ptr_PhysicalStorageBuffer_uint
// CHECK: OpLoad %uint %{{[0-9]+}} Aligned 4
// CHECK: OpConvertUToPtr %_ptr_PhysicalStorageBuffer_float
// CHECK: OpLoad %float %{{[0-9]+}} Aligned 4
// CHECK: OpFMul %float
// CHECK: OpConvertUToPtr %_ptr_PhysicalStorageBuffer_float
// CHECK: OpStore %{{[0-9]+}} %{{[0-9]+}} Aligned 4
// CHECK: OpFunctionEnd
