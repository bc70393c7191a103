#include <metal_stdlib>
using namespace metal;
kernel void simd_functions(device float* o [[buffer(0)]], device uint* u [[buffer(1)]], device ulong* b [[buffer(2)]], uint i [[thread_position_in_grid]]) {
  float x = o[i];
  float r = simd_sum(x) + simd_product(x) + simd_min(x) + simd_max(x);
  r += simd_prefix_inclusive_sum(x) + simd_prefix_exclusive_sum(x) + simd_prefix_inclusive_product(x) + simd_prefix_exclusive_product(x);
  r += simd_shuffle(x, 3) + simd_shuffle_xor(x, 1) + simd_shuffle_up(x, 1) + simd_shuffle_down(x, 2) + simd_broadcast_first(x);
  r += simd_shuffle_rotate_up(x, 1) + simd_shuffle_rotate_down(x, 1);
  o[i] = r;
  uint v = u[i];
  u[i] = simd_and(v) + simd_or(v) + simd_xor(v) + simd_min(v) + simd_max(int(v)) + (simd_all(v > 3) ? 1u : 0u) + (simd_any(v > 7) ? 2u : 0u) + (simd_is_first() ? 4u : 0u);
  b[i] = ulong(simd_vote::vote_t(simd_ballot(v > 1)));
}
// MODE: asm
// Rule: simd_* functions -> OpGroupNonUniform* at Subgroup scope (3): reductions with Reduce, prefix sums/products
// with InclusiveScan/ExclusiveScan, shuffles (shuffle_up/down/rotate via OpGroupNonUniformShuffle with a computed
// lane), xor shuffle, broadcast_first, all/any, ballot, simd_is_first -> Elect.
// CHECK-DAG: OpCapability GroupNonUniformArithmetic
// CHECK-DAG: OpCapability GroupNonUniformShuffle
// CHECK-DAG: OpCapability GroupNonUniformBallot
// CHECK-DAG: OpCapability GroupNonUniformVote
// CHECK-LABEL: %main = OpFunction
// CHECK: OpGroupNonUniformFAdd %float %uint_3 Reduce
// CHECK: OpGroupNonUniformFMul %float %uint_3 Reduce
// CHECK: OpGroupNonUniformFMin %float %uint_3 Reduce
// CHECK: OpGroupNonUniformFMax %float %uint_3 Reduce
// CHECK: OpGroupNonUniformFAdd %float %uint_3 InclusiveScan
// CHECK: OpGroupNonUniformFAdd %float %uint_3 ExclusiveScan
// CHECK: OpGroupNonUniformFMul %float %uint_3 InclusiveScan
// CHECK: OpGroupNonUniformFMul %float %uint_3 ExclusiveScan
// CHECK: OpGroupNonUniformShuffle %float %uint_3 %{{[0-9]+}} %uint_3
// CHECK: OpGroupNonUniformShuffleXor %float %uint_3 %{{[0-9]+}} %uint_1
// CHECK: OpGroupNonUniformShuffle %float %uint_3
// CHECK: OpGroupNonUniformShuffle %float %uint_3
// CHECK: OpGroupNonUniformBroadcastFirst %float %uint_3
// CHECK: OpGroupNonUniformShuffle %float %uint_3
// CHECK: OpGroupNonUniformShuffle %float %uint_3
// CHECK: OpGroupNonUniformBitwiseAnd %uint %uint_3 Reduce
// CHECK: OpGroupNonUniformBitwiseOr %uint %uint_3 Reduce
// CHECK: OpGroupNonUniformBitwiseXor %uint %uint_3 Reduce
// CHECK: OpGroupNonUniformUMin %uint %uint_3 Reduce
// CHECK: OpGroupNonUniformSMax %uint %uint_3 Reduce
// CHECK: OpGroupNonUniformAll %bool %uint_3
// CHECK: OpGroupNonUniformAny %bool %uint_3
// CHECK: OpGroupNonUniformElect %bool %uint_3
// CHECK: OpGroupNonUniformBallot %v4uint %uint_3
