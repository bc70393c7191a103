// MODE: asm
// Rule: early returns (a bounds check, a return inside a loop) are structured: the function has a single OpReturn
// reached through selection/loop merges, and the simd reduction after the returns still executes in structured flow.
#include <metal_stdlib>
using namespace metal;
kernel void cf_early_return(device const float* in [[buffer(0)]], device float* out [[buffer(1)]],
                            constant uint& n [[buffer(2)]], uint gid [[thread_position_in_grid]]) {
  if (gid >= n) return;
  for (uint i = 0; i < n; ++i) {
    if (in[i] == 12345.0f) {
      out[gid] = -1.0f;
      return;
    }
  }
  out[gid] = simd_sum(in[gid]);
}
// CHECK-LABEL: %main = OpFunction
// CHECK: OpSelectionMerge
// CHECK: OpLoopMerge
// CHECK: OpGroupNonUniformFAdd %float %uint_3 Reduce
// CHECK: OpReturn
// CHECK-NOT: OpReturn
// CHECK: OpFunctionEnd
