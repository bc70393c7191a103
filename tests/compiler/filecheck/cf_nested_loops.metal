// MODE: asm
// Rule: nested loops with independent run-time bounds get one OpLoopMerge each, the inner loop's construct nested in
// the outer one's.
#include <metal_stdlib>
using namespace metal;
kernel void cf_nested_loops(device float* C [[buffer(0)]], constant int& n [[buffer(1)]], constant int& m [[buffer(2)]]) {
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < m; ++j) C[i * m + j] = 0.0f;
}
// CHECK-LABEL: %main = OpFunction
// CHECK: OpLoopMerge %[[OUTER:[0-9]+]]
// CHECK: OpLoopMerge %[[INNER:[0-9]+]]
// CHECK: %[[INNER]] = OpLabel
// CHECK: %[[OUTER]] = OpLabel
// CHECK: OpReturn
