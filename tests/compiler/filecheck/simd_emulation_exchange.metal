// ARGS: --entry uniform_max
// Rule (SPIR-V, spirv/EmitSimdEmulation.cpp): an emulated simdgroup function stores the thread's word in a slot of
// a workgroup array sized by the workgroup-size specialization constants (4 slots of the threadgroup rounded up to
// 32 threads), waits at a workgroup barrier and reads the 32 words of its simdgroup; the same operand's word is not
// stored again for a second function of it in the same block (simd_max then simd_min: one store, one barrier).
#include <metal_stdlib>
using namespace metal;
kernel void uniform_max(device const float* x [[buffer(0)]], device float* out [[buffer(1)]],
                        uint i [[thread_position_in_grid]]) {
  out[i] = simd_max(x[i]) + simd_min(x[i]);
}
// CHECK-DAG: OpDecorate [[EMULATE:%[0-9a-z_]+]] SpecId 131120
// CHECK-DAG: OpName [[EXCHANGE:%[0-9a-z_]+]] "m2v_simd_exchange"
// CHECK-DAG: [[ROUNDED:%[0-9a-z_]+]] = OpSpecConstantOp %uint UDiv
// CHECK-DAG: [[EMULATE]] = OpSpecConstantFalse %bool
// CHECK: [[SLOT:%[0-9a-z_]+]] = OpAccessChain %_ptr_Workgroup_uint [[EXCHANGE]]
// CHECK-NEXT: OpStore [[SLOT]]
// CHECK-NEXT: OpControlBarrier %uint_2 %uint_2 %uint_328
// CHECK-COUNT-32: OpLoad %uint
// CHECK: OpExtInst %float {{%[0-9a-z_]+}} NMax
// CHECK-NOT: OpControlBarrier
// CHECK-COUNT-32: OpLoad %uint
// CHECK-NOT: OpControlBarrier
// CHECK: OpExtInst %float {{%[0-9a-z_]+}} NMin
