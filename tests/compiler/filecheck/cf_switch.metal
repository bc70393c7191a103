// MODE: asm
// Rule: a switch becomes structured control flow (an OpSwitch under OpSelectionMerge, or an equivalent chain of
// OpSelectionMerge/OpBranchConditional), with every case reaching a single merge.
#include <metal_stdlib>
using namespace metal;
kernel void cf_switch(device const int* ops [[buffer(0)]], device float* out [[buffer(1)]],
                      uint gid [[thread_position_in_grid]]) {
  float r = out[gid];
  switch (ops[gid]) {
    case 0: r += 1.0f; break;
    case 1: r *= 3.0f; break;
    case 2: r = sqrt(r); break;
    case 7: r = -r; [[fallthrough]];
    case 8: r -= 2.0f; break;
    default: r = 0.0f; break;
  }
  out[gid] = r;
}
// CHECK-LABEL: %main = OpFunction
// CHECK: OpSelectionMerge %[[M:[0-9]+]]
// CHECK-NEXT: {{OpSwitch|OpBranchConditional}}
// CHECK: %[[M]] = OpLabel
// CHECK: OpReturn
