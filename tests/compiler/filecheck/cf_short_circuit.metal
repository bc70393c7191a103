// MODE: asm
// Rule: short-circuit conditions whose right operand reads memory are structured (OpSelectionMerge before each
// conditional branch), so the guarded load is only executed when the left operand allows it.
#include <metal_stdlib>
using namespace metal;
kernel void cf_short_circuit(device const float* a [[buffer(0)]], device const int* idx [[buffer(1)]],
                             device float* out [[buffer(2)]], constant uint& n [[buffer(3)]],
                             uint gid [[thread_position_in_grid]]) {
  int k = idx[gid];
  if (k >= 0 && uint(k) < n && a[k] > 0.0f) out[gid] = a[k];
}
// CHECK-LABEL: %main = OpFunction
// CHECK: OpSelectionMerge
// CHECK-NEXT: OpBranchConditional
// CHECK: OpLoad %float
// CHECK: OpReturn
