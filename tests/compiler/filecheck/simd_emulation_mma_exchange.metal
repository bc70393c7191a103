// ARGS: --entry multiply
// Rule (SPIR-V, spirv/EmitSimdEmulation.cpp): an emulated simdgroup function publishes, before its first barrier,
// the words of its own operand and of the later simdgroup functions' operands in its block that are computed
// already, as many as the four slots hold. An 8x8 matrix multiply (twelve shuffles of two float2 fragments) stores
// the four words behind one barrier and reads them all without another.
#include <metal_stdlib>
using namespace metal;
kernel void multiply(device const float2* x [[buffer(0)]], device float2* out [[buffer(1)]],
                     uint lane [[thread_index_in_simdgroup]]) {
  simdgroup_float8x8 a, b, c = make_filled_simdgroup_matrix<float, 8>(0.0f);
  a.thread_elements() = x[lane];
  b.thread_elements() = x[32 + lane];
  simdgroup_multiply_accumulate(c, a, b, c);
  out[lane] = c.thread_elements();
}
// CHECK: OpName [[EXCHANGE:%[0-9a-z_]+]] "m2v_simd_exchange"
// CHECK: OpControlBarrier %uint_2 %uint_2 %uint_328
// CHECK-COUNT-4: OpStore {{%[0-9]+}} {{%[0-9]+$}}
// CHECK-NEXT: OpControlBarrier %uint_2 %uint_2 %uint_328
// CHECK-NOT: OpControlBarrier
// CHECK: OpFunctionEnd
