// MODE: asm
// Rule: the workgroup size is OpExecutionModeId LocalSizeId of three OpSpecConstant %uint 1 with SpecIds
// 131072..131074 (never a literal LocalSize).
#include <metal_stdlib>
using namespace metal;
kernel void workgroup_size_asm(device float* o [[buffer(0)]], uint gid [[thread_position_in_grid]]) { o[gid] = 1.0f; }
// CHECK-NOT: OpExecutionMode %main LocalSize
// CHECK: OpExecutionModeId %main LocalSizeId %[[X:[0-9]+]] %[[Y:[0-9]+]] %[[Z:[0-9]+]]
// CHECK-DAG: OpDecorate %[[X]] SpecId 131072
// CHECK-DAG: OpDecorate %[[Y]] SpecId 131073
// CHECK-DAG: OpDecorate %[[Z]] SpecId 131074
// CHECK-DAG: %[[X]] = OpSpecConstant %uint 1
// CHECK-DAG: %[[Y]] = OpSpecConstant %uint 1
// CHECK-DAG: %[[Z]] = OpSpecConstant %uint 1
