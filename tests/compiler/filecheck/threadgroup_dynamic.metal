// MODE: asm
// Rule: a [[threadgroup(n)]] parameter becomes a Workgroup array whose length is a specialization constant with
// SpecId 131088 + n holding the byte length (the element count is the spec-constant op length / element size).
#include <metal_stdlib>
using namespace metal;
kernel void threadgroup_dynamic(device float* o [[buffer(0)]], threadgroup float* dyn [[threadgroup(2)]],
                                threadgroup uint* other [[threadgroup(0)]], uint lid [[thread_index_in_threadgroup]]) {
  dyn[lid] = o[lid];
  other[lid] = lid;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  o[lid] = dyn[lid ^ 1] + float(other[lid ^ 2]);
}
// CHECK-DAG: OpDecorate %[[LEN2:[0-9]+]] SpecId 131090
// CHECK-DAG: OpDecorate %[[LEN0:[0-9]+]] SpecId 131088
// CHECK-DAG: %[[LEN2]] = OpSpecConstant %uint {{[0-9]+}}
// CHECK-DAG: %[[N2:[0-9]+]] = OpSpecConstantOp %uint UDiv %[[LEN2]] %uint_4
// CHECK-DAG: %[[ARR2:[_a-z0-9]+]] = OpTypeArray %float %[[N2]]
// CHECK-DAG: %[[PTR2:[_A-Za-z0-9]+]] = OpTypePointer Workgroup %[[ARR2]]
// CHECK-DAG: %[[VAR2:[_A-Za-z0-9]+]] = OpVariable %[[PTR2]] Workgroup
// CHECK-DAG: %[[LEN0]] = OpSpecConstant %uint {{[0-9]+}}
// CHECK-LABEL: %main = OpFunction
// CHECK: OpAccessChain %_ptr_Workgroup_float %[[VAR2]]
