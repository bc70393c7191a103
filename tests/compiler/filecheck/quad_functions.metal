#include <metal_stdlib>
using namespace metal;
kernel void quad_functions(device float* o [[buffer(0)]], device int* u [[buffer(1)]], uint i [[thread_position_in_grid]]) {
  float x = o[i];
  o[i] = quad_sum(x) + quad_max(x) + quad_shuffle(x, 1) + quad_shuffle_xor(x, 2) + quad_broadcast_first(x) + quad_prefix_inclusive_sum(x);
  u[i] = quad_and(u[i]) + quad_min(u[i]) + (quad_all(x > 0.0f) ? 1 : 0) + int(quad_vote::vote_t(quad_ballot(x > 1.0f)));
}
// MODE: asm
// Rule: quad_ reductions -> OpGroupNonUniform* ClusteredReduce with cluster size 4; quad shuffles -> subgroup
// shuffles to a lane computed within the quad; quad_ballot -> a subgroup ballot masked to the quad.
// CHECK-DAG: OpCapability GroupNonUniformClustered
// CHECK-LABEL: %main = OpFunction
// CHECK: OpGroupNonUniformFAdd %float %uint_3 ClusteredReduce %{{[0-9]+}} %uint_4
// CHECK: OpGroupNonUniformFMax %float %uint_3 ClusteredReduce %{{[0-9]+}} %uint_4
// CHECK: OpGroupNonUniformShuffle %float %uint_3
// CHECK: OpGroupNonUniformShuffle{{(Xor)?}} %float %uint_3
// CHECK: OpGroupNonUniformBitwiseAnd %uint %uint_3 ClusteredReduce %{{[0-9]+}} %uint_4
// CHECK: OpGroupNonUniformSMin %uint %uint_3 ClusteredReduce %{{[0-9]+}} %uint_4
// CHECK: OpGroupNonUniformBallot %v4uint %uint_3
