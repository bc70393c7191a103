// MODE: json
// Rule: the reflection lists function constants with spec_id = index and defined_spec_id = 65536 + index, and a
// guarded buffer keeps its push-constant slot.
#include <metal_stdlib>
using namespace metal;
constant bool has_bias [[function_constant(3)]];
constant float alpha [[function_constant(9)]];
kernel void function_constants_json(device float* o [[buffer(0)]],
                                    device const float* bias [[buffer(1), function_constant(has_bias)]],
                                    uint i [[thread_position_in_grid]]) {
  float v = o[i] * alpha;
  if (has_bias) v += bias[i];
  o[i] = v;
}
// CHECK: "function_constants": [
// CHECK: "defined_spec_id": 65539,
// CHECK-NEXT: "index": 3,
// CHECK-NEXT: "name": "has_bias",
// CHECK-NEXT: "spec_id": 3,
// CHECK-NEXT: "type": "bool"
// CHECK: "defined_spec_id": 65545,
// CHECK-NEXT: "index": 9,
// CHECK-NEXT: "name": "alpha",
// CHECK-NEXT: "spec_id": 9,
// CHECK-NEXT: "type": "float"
// CHECK: "push_constants":
// CHECK: "buffer": 1
