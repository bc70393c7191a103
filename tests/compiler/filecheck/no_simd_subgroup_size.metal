// MODE: json
// Rule: a kernel without simdgroup/quadgroup functions or built-ins works with any subgroup size (0).
#include <metal_stdlib>
using namespace metal;
kernel void no_simd_subgroup_size(device float* o [[buffer(0)]], uint i [[thread_position_in_grid]]) {
  o[i] = o[i] * 2.0f;
}
// CHECK-NOT: GroupNonUniform
// CHECK: "required_subgroup_size": 0
