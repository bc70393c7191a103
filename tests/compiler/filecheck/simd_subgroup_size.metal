// MODE: json
// Rule: a kernel that uses simd functions or simdgroup built-ins requires subgroup size 32 in its reflection, and
// lists the GroupNonUniform capabilities it uses.
#include <metal_stdlib>
using namespace metal;
kernel void simd_subgroup_size(device float* o [[buffer(0)]], uint i [[thread_position_in_grid]]) {
  o[i] = simd_sum(o[i]);
}
// CHECK: "capabilities": [
// CHECK-DAG: "GroupNonUniform"
// CHECK-DAG: "GroupNonUniformArithmetic"
// CHECK: "required_subgroup_size": 32
