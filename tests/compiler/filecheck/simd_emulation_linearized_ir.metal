// MODE: ir
// ARGS: --entry half_group_sum
// Rule (lowered IR, lower/EmulateSimdgroups.cpp): a simdgroup function only some threads reach runs for every
// thread of the emulated body, with the thread's path as its active mask (Metal's active lanes), and the store
// behind the same branch runs only where the thread's path goes.
#include <metal_stdlib>
using namespace metal;
kernel void half_group_sum(device const float* x [[buffer(0)]], device float* out [[buffer(1)]],
                           uint i [[thread_position_in_grid]], uint lane [[thread_index_in_simdgroup]]) {
  if (lane < 16) out[i] = simd_sum(x[i]);
}
// CHECK: entry.emu:
// CHECK: [[LANE:%[0-9]+]] = and i32 {{%[0-9]+}}, 31
// CHECK: [[TAKES:%[0-9a-z.]+]] = icmp ult i32 [[LANE]], 16
// CHECK: [[ACTIVE:%[0-9]+]] = or i1 false, [[TAKES]]
// CHECK: br i1 [[ACTIVE]], label %[[LOAD:guarded[0-9]*]]
// CHECK: call float @m2v.emulated.simd_reduce_add.{{.*}}(float {{%[0-9]+}}, i1 [[ACTIVE]])
// CHECK: br i1 [[ACTIVE]], label %[[STORE:guarded[0-9]*]]
// CHECK: [[STORE]]:
// CHECK-NEXT: store float
