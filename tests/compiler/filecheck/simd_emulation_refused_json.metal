// MODE: json
// Rule (reflection, lower/EmulateSimdgroups.cpp): a simdgroup function in a loop that only some threads reach, whose
// trip count comes from memory read on their path only, has no emulated body (the threads that skip the loop would
// run it with a count they never read); the reflection says where and why, and keeps the native module.
#include <metal_stdlib>
using namespace metal;
kernel void count_read_behind_branch(device const float* x [[buffer(0)]], device const uint* n [[buffer(1)]],
                                     device float* out [[buffer(2)]], uint i [[thread_position_in_grid]],
                                     uint lane [[thread_index_in_simdgroup]]) {
  float acc = 0;
  if (lane < 16) {
    uint count = n[0];
    for (uint k = 0; k < count; ++k) acc += simd_sum(x[k]);
  }
  out[i] = acc;
}
// CHECK: "required_subgroup_size": 32
// CHECK-NOT: emulated_simdgroups_spec_id
// CHECK: "simdgroup_emulation_refused": "simd_emulation_refused_json.metal:13: simd_reduce_add is skipped by some threads {{.*}}a simdgroup function in a loop whose trip count the threads that skip it do not compute
