// MODE: asm
// Rule: thread_position_in_grid = WorkgroupId * nominal threadgroup size (spec constants 131075..131077)
// + the position in the threadgroup; threads_per_threadgroup is this region's workgroup size (LocalSizeId spec
// constants 131072..131074); threads_per_grid is the push-constant grid at offset 0. Both select, on the spec
// constants 131078..131080 (Metal's shape of a threadgroup the runtime ran as a linear workgroup; 0 otherwise),
// between LocalInvocationId / the workgroup size and what the linear index and that shape give.
#include <metal_stdlib>
using namespace metal;
kernel void builtins_grid(device uint3* o [[buffer(0)]], uint3 tpig [[thread_position_in_grid]],
                          uint3 tptg [[threads_per_threadgroup]], uint3 grid [[threads_per_grid]]) {
  o[tpig.x * 3] = tpig;
  o[tpig.x * 3 + 1] = tptg;
  o[tpig.x * 3 + 2] = grid;
}
// CHECK-DAG: OpExecutionModeId %main LocalSizeId %[[WX:[0-9]+]] %[[WY:[0-9]+]] %[[WZ:[0-9]+]]
// CHECK-DAG: OpDecorate %[[WX]] SpecId 131072
// CHECK-DAG: OpDecorate %[[WY]] SpecId 131073
// CHECK-DAG: OpDecorate %[[WZ]] SpecId 131074
// CHECK-DAG: OpDecorate %[[NX:[0-9]+]] SpecId 131075
// CHECK-DAG: OpDecorate %[[NY:[0-9]+]] SpecId 131076
// CHECK-DAG: OpDecorate %[[NZ:[0-9]+]] SpecId 131077
// CHECK-DAG: OpDecorate %[[SX:[0-9]+]] SpecId 131078
// CHECK-DAG: OpDecorate %[[SY:[0-9]+]] SpecId 131079
// CHECK-DAG: OpDecorate %[[SZ:[0-9]+]] SpecId 131080
// CHECK-DAG: OpDecorate %gl_WorkGroupID BuiltIn WorkgroupId
// CHECK-DAG: OpDecorate %gl_LocalInvocationID BuiltIn LocalInvocationId
// CHECK-DAG: %[[WS:[0-9]+]] = OpSpecConstantComposite %v3uint %[[WX]] %[[WY]] %[[WZ]]
// CHECK-DAG: %[[NS:[0-9]+]] = OpSpecConstantComposite %v3uint %[[NX]] %[[NY]] %[[NZ]]
// CHECK-DAG: %[[SS:[0-9]+]] = OpSpecConstantComposite %v3uint %[[SX]] %[[SY]] %[[SZ]]
// CHECK-LABEL: %main = OpFunction
// CHECK-DAG: %[[GRIDP:[0-9]+]] = OpAccessChain %_ptr_PushConstant_v3uint %args %uint_0
// CHECK-DAG: %[[GRID:[0-9]+]] = OpLoad %v3uint %[[GRIDP]]
// CHECK-DAG: %[[WG:[0-9]+]] = OpLoad %v3uint %gl_WorkGroupID
// CHECK-DAG: %[[LID:[0-9]+]] = OpLoad %v3uint %gl_LocalInvocationID
// CHECK-DAG: %[[MUL:[0-9]+]] = OpIMul %v3uint %[[WG]] %[[NS]]
// CHECK-DAG: %[[POS:[0-9]+]] = OpSelect %v3uint %{{[0-9]+}} %[[LID]] %{{[0-9]+}}
// CHECK-DAG: %[[TPIG:[0-9]+]] = OpIAdd %v3uint %[[POS]] %[[MUL]]
// CHECK-DAG: %[[TPTG:[0-9]+]] = OpSelect %v3uint %{{[0-9]+}} %[[WS]] %[[SS]]
// CHECK-DAG: OpVectorShuffle %v4uint %[[TPIG]] %{{[0-9]+}} 0 1 2 3
// CHECK-DAG: OpVectorShuffle %v4uint %[[TPTG]] %{{[0-9]+}} 0 1 2 3
// CHECK-DAG: OpVectorShuffle %v4uint %[[GRID]] %{{[0-9]+}} 0 1 2 3
// CHECK: OpFunctionEnd
