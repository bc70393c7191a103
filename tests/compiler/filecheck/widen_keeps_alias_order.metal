// MODE: asm
// Rule (lower/WidenAccesses.cpp): widening never moves an access over another one that may touch the same memory.
// Metal buffer arguments may alias (an output bound over an input, at any offset). Here the load of the next element
// (a[i + k + 1 + off]) and the store of this one (c[i + k]) are at offsets that differ by a run-time amount, so no
// checked distance between the buffers rules out an overlap: the loads cannot move above the stores, the accesses
// stay 2-byte ones and the kernel is left as it was (no check, no second path).
#include <metal_stdlib>
using namespace metal;
kernel void widen_keeps_alias_order(device const half* a [[buffer(0)]], constant int& off [[buffer(1)]],
                                    device half* c [[buffer(2)]], uint gid [[thread_position_in_grid]]) {
  uint i = 4 * gid;
  for (int k = 0; k < 4; ++k) c[i + k] = a[i + k + off] * 2.0h;
}
// CHECK-LABEL: %main = OpFunction
// CHECK-NOT: %ulong_15
// CHECK-NOT: v4half
// CHECK-COUNT-4: OpLoad %half %{{[0-9]+}} Aligned 2
// CHECK-NOT: v4half
// CHECK: OpFunctionEnd
