// MODE: ir
// ARGS: --entry uniform_sum
// Rule (lowered IR, lower/EmulateSimdgroups.cpp): a kernel with simdgroup functions gets a second body, chosen by
// the specialization constant 131120; there the built-ins come from the thread's index (lane = index & 31) and
// each simdgroup function is an emulated call whose last operand is true where every thread takes part. The native
// body keeps the subgroup call.
#include <metal_stdlib>
using namespace metal;
kernel void uniform_sum(device const float* x [[buffer(0)]], device float* out [[buffer(1)]],
                        uint i [[thread_position_in_grid]], uint lane [[thread_index_in_simdgroup]]) {
  out[i] = simd_sum(x[i]) + float(lane);
}
// CHECK-LABEL: define void @main()
// CHECK-NEXT: dispatch:
// CHECK-NEXT: call i1 @m2v.spec.i1(i32 131120)
// CHECK: call {{.*}}float @_ZN5__m2v15simd_reduce_addIfEET_S1_(
// CHECK: entry.emu:
// CHECK: [[INDEX:%[0-9]+]] = call i32 @m2v.builtin.local_invocation_index()
// CHECK-NEXT: and i32 [[INDEX]], 31
// CHECK: call float @m2v.emulated.simd_reduce_add.{{.*}}(float {{.*}}, i1 true)
