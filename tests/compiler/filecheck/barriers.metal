#include <metal_stdlib>
using namespace metal;
kernel void barriers(device float* o [[buffer(0)]], uint lid [[thread_index_in_threadgroup]]) {
  threadgroup_barrier(mem_flags::mem_threadgroup);
  o[lid] = 1.0f;
  threadgroup_barrier(mem_flags::mem_device);
  o[lid] += 1.0f;
  threadgroup_barrier(mem_flags::mem_none);
  o[lid] += 1.0f;
  threadgroup_barrier(mem_flags::mem_device | mem_flags::mem_threadgroup);
  o[lid] += 1.0f;
  simdgroup_barrier(mem_flags::mem_threadgroup);
  o[lid] += 1.0f;
  simdgroup_barrier(mem_flags::mem_none);
}
// Rule: threadgroup_barrier -> OpControlBarrier Workgroup(2) Workgroup(2) with semantics from mem_flags:
// mem_threadgroup = AcquireRelease|WorkgroupMemory (0x108 = 264), mem_device = AcquireRelease|UniformMemory
// (0x48 = 72), mem_none = mem_threadgroup (Apple's GPUs order threadgroup memory at every threadgroup barrier, and
// kernels rely on it: MLX's gemv), both = 328; simdgroup_barrier -> OpControlBarrier Subgroup(3) Subgroup(3),
// mem_none = 0 there.
// MODE: asm
// CHECK-LABEL: %main = OpFunction
// CHECK: OpControlBarrier %uint_2 %uint_2 %uint_264
// CHECK: OpControlBarrier %uint_2 %uint_2 %uint_72
// CHECK: OpControlBarrier %uint_2 %uint_2 %uint_264
// CHECK: OpControlBarrier %uint_2 %uint_2 %uint_328
// CHECK: OpControlBarrier %uint_3 %uint_3 %uint_264
// CHECK: OpControlBarrier %uint_3 %uint_3 %uint_0
// The emulated body (docs/ABI.md, "Subgroups") repeats them, its simdgroups' barriers on the whole workgroup.
// CHECK: OpControlBarrier %uint_2 %uint_2 %uint_264
// CHECK: OpControlBarrier %uint_2 %uint_2 %uint_72
// CHECK: OpControlBarrier %uint_2 %uint_2 %uint_264
// CHECK: OpControlBarrier %uint_2 %uint_2 %uint_328
// CHECK: OpControlBarrier %uint_2 %uint_2 %uint_328
// CHECK: OpControlBarrier %uint_2 %uint_2 %uint_328
// CHECK-NOT: OpControlBarrier
// CHECK: OpFunctionEnd
