// MODE: asm
// Rule: a loop with break and continue becomes structured control flow: an OpLoopMerge in the loop header naming a
// merge block and a continue target, and OpSelectionMerge for each conditional inside the body.
#include <metal_stdlib>
using namespace metal;
kernel void cf_loop_break_continue(device const float* in [[buffer(0)]], device float* out [[buffer(1)]],
                                   constant int& n [[buffer(2)]], uint gid [[thread_position_in_grid]]) {
  float acc = 0.0f;
  for (int i = 0; i < n; ++i) {
    float v = in[i];
    if (v < 0.0f) continue;
    if (v > 100.0f) break;
    acc += v;
  }
  out[gid] = acc;
}
// CHECK-LABEL: %main = OpFunction
// CHECK: OpLoopMerge %[[MERGE:[0-9]+]] %[[CONT:[0-9]+]] None
// CHECK: OpSelectionMerge
// CHECK: %[[CONT]] = OpLabel
// CHECK: %[[MERGE]] = OpLabel
// CHECK: OpReturn
