#include <metal_stdlib>
using namespace metal;
kernel void quad_functions(device float* o [[buffer(0)]], device int* u [[buffer(1)]], uint i [[thread_position_in_grid]]) {
  float x = o[i];
  o[i] = quad_sum(x) + quad_max(x) + quad_shuffle(x, 1) + quad_shuffle_xor(x, 2) + quad_broadcast_first(x) + quad_prefix_inclusive_sum(x);
  u[i] = quad_and(u[i]) + quad_min(u[i]) + (quad_all(x > 0.0f) ? 1 : 0) + int(quad_vote::vote_t(quad_ballot(x > 1.0f)));
}
// MODE: asm
// Rule: quad_ reductions -> two subgroup shuffle-xor steps (1, 2) with the operation between (no clustered reduce:
// the capability is optional and lavapipe lacks it); quad shuffles -> subgroup shuffles to a lane computed within
// the quad; quad_ballot -> a subgroup ballot masked to the quad.
// CHECK-NOT: OpCapability GroupNonUniformClustered
// CHECK-LABEL: %main = OpFunction
// CHECK: [[X1:%[0-9]+]] = OpGroupNonUniformShuffleXor %float %uint_3 [[X:%[0-9]+]] %uint_1
// CHECK-NEXT: [[S1:%[0-9]+]] = OpFAdd %float [[X]] [[X1]]
// CHECK-NEXT: [[X2:%[0-9]+]] = OpGroupNonUniformShuffleXor %float %uint_3 [[S1]] %uint_2
// CHECK-NEXT: OpFAdd %float [[S1]] [[X2]]
// CHECK: OpExtInst %float {{%[0-9]+}} NMax
// CHECK: OpGroupNonUniformShuffle %float %uint_3
// CHECK: OpGroupNonUniformShuffle{{(Xor)?}} %float %uint_3
// CHECK: OpGroupNonUniformShuffleXor %uint %uint_3 {{%[0-9]+}} %uint_1
// CHECK-NEXT: OpBitwiseAnd %uint
// CHECK: OpExtInst %uint {{%[0-9]+}} SMin
// CHECK: OpGroupNonUniformBallot %v4uint %uint_3
