// MODE: asm
// Rule: a threadgroup variable declared in a kernel body (and one at namespace scope used by a helper) becomes a
// Workgroup-storage OpVariable listed in the entry point interface; accesses are typed access chains into it.
#include <metal_stdlib>
using namespace metal;
kernel void threadgroup_static(device float* o [[buffer(0)]], uint lid [[thread_index_in_threadgroup]]) {
  threadgroup float tile[64];
  threadgroup int flag;
  if (lid == 0) flag = 7;
  tile[lid] = o[lid];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  o[lid] = tile[63 - lid] + float(flag);
}
// CHECK: OpEntryPoint GLCompute %main "main" {{.*}}%[[TILE:[_A-Za-z0-9]*tile[_A-Za-z0-9]*]]
// CHECK-DAG: %[[ARR:[_a-z0-9]+]] = OpTypeArray %float %uint_64
// CHECK-DAG: %[[PTR:[_A-Za-z0-9]+]] = OpTypePointer Workgroup %[[ARR]]
// CHECK-DAG: %[[TILE]] = OpVariable %[[PTR]] Workgroup
// CHECK-DAG: %{{[_A-Za-z0-9]*flag[_A-Za-z0-9]*}} = OpVariable %_ptr_Workgroup_{{[_a-z0-9]+}} Workgroup
// CHECK-LABEL: %main = OpFunction
// CHECK: OpAccessChain %_ptr_Workgroup_float %[[TILE]]
// CHECK: OpControlBarrier
// CHECK: OpAccessChain %_ptr_Workgroup_float %[[TILE]]
