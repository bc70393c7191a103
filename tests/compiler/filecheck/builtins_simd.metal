// MODE: asm
// Rule: simdgroup/quadgroup built-ins: thread_index_in_simdgroup -> SubgroupLocalInvocationId,
// simdgroup_index_in_threadgroup -> SubgroupId, threads_per_simdgroup -> SubgroupSize,
// thread_index_in_threadgroup -> LocalInvocationIndex, quadgroup_index_in_threadgroup = index >> 2,
// thread_index_in_quadgroup = index & 3, simdgroups_per_threadgroup = ceil(threads / SubgroupSize),
// threadgroups_per_grid = ceil(grid / nominal threadgroup size).
#include <metal_stdlib>
using namespace metal;
kernel void builtins_simd(device uint* o [[buffer(0)]], uint tiitg [[thread_index_in_threadgroup]],
                          uint tiisg [[thread_index_in_simdgroup]], uint sgitg [[simdgroup_index_in_threadgroup]],
                          uint tpsg [[threads_per_simdgroup]], uint sgptg [[simdgroups_per_threadgroup]],
                          uint qg [[quadgroup_index_in_threadgroup]], uint tiq [[thread_index_in_quadgroup]],
                          uint3 tgpig [[threadgroup_position_in_grid]], uint3 tgpg [[threadgroups_per_grid]]) {
  device uint* p = o + tiitg * 16;
  p[0] = tiisg; p[1] = sgitg; p[2] = tpsg; p[3] = sgptg; p[4] = qg; p[5] = tiq; p[6] = tgpig.y; p[7] = tgpg.x;
}
// CHECK-DAG: OpDecorate %gl_LocalInvocationIndex BuiltIn LocalInvocationIndex
// CHECK-DAG: OpDecorate %SubgroupLocalInvocationId BuiltIn SubgroupLocalInvocationId
// CHECK-DAG: OpDecorate %SubgroupId BuiltIn SubgroupId
// CHECK-DAG: OpDecorate %SubgroupSize BuiltIn SubgroupSize
// CHECK-DAG: OpDecorate %gl_WorkGroupID BuiltIn WorkgroupId
// CHECK-LABEL: %main = OpFunction
// CHECK-DAG: %[[L:[0-9]+]] = OpLoad %uint %gl_LocalInvocationIndex
// CHECK-DAG: %[[LANE:[0-9]+]] = OpLoad %uint %SubgroupLocalInvocationId
// CHECK-DAG: %[[SG:[0-9]+]] = OpLoad %uint %SubgroupId
// CHECK-DAG: %[[SZ:[0-9]+]] = OpLoad %uint %SubgroupSize
// CHECK-DAG: OpUDiv %uint %{{[0-9]+}} %[[SZ]]
// CHECK-DAG: %[[QG:[0-9]+]] = OpShiftRightLogical %uint %[[L]] %uint_2
// CHECK-DAG: %[[QL:[0-9]+]] = OpBitwiseAnd %uint %[[L]] %uint_3
// CHECK-DAG: OpStore %{{[0-9]+}} %[[LANE]] Aligned 4
// CHECK-DAG: OpStore %{{[0-9]+}} %[[SG]] Aligned 4
// CHECK-DAG: OpStore %{{[0-9]+}} %[[SZ]] Aligned 4
// CHECK-DAG: OpStore %{{[0-9]+}} %[[QG]] Aligned 4
// CHECK-DAG: OpStore %{{[0-9]+}} %[[QL]] Aligned 4
