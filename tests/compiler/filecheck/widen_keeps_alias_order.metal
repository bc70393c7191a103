// MODE: asm
// Rule (lower/WidenAccesses.cpp): widening never moves an access over another one that may touch the same memory.
// Metal buffer arguments may alias (an output bound over an input, at any offset), so in an elementwise loop that
// loads a[i], b[i] and stores c[i] in turn, the loads of the next element cannot move above the store of this one:
// the accesses stay 2-byte ones and the kernel is left as it was (no alignment check).
#include <metal_stdlib>
using namespace metal;
kernel void widen_keeps_alias_order(device const half* a [[buffer(0)]], device const half* b [[buffer(1)]],
                                    device half* c [[buffer(2)]], uint gid [[thread_position_in_grid]]) {
  uint i = 4 * gid;
  for (int k = 0; k < 4; ++k) c[i + k] = a[i + k] + b[i + k];
}
// CHECK-LABEL: %main = OpFunction
// CHECK-NOT: %ulong_15
// CHECK-NOT: v4half
// CHECK-COUNT-8: OpLoad %half %{{[0-9]+}} Aligned 2
// CHECK-NOT: v4half
// CHECK: OpFunctionEnd
