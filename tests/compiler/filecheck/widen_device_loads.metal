// MODE: asm
// Rule (lower/WidenAccesses.cpp): a thread's adjacent narrow loads of a device buffer become one vector load when
// their address is aligned to the vector's size, given that the buffer address is a multiple of 16. The kernel
// checks that once (address & 15 == 0) and takes either the widened copy (one 8-byte load of four halves) or the
// kernel as written (four 2-byte loads): a buffer bound at an offset that is only 2-byte aligned stays correct.
#include <metal_stdlib>
using namespace metal;
kernel void widen_device_loads(device const half* a [[buffer(0)]], device float* out [[buffer(1)]],
                               uint gid [[thread_position_in_grid]]) {
  uint i = 4 * gid;
  out[gid] = float(a[i]) + float(a[i + 1]) + float(a[i + 2]) + float(a[i + 3]);
}
// CHECK-LABEL: %main = OpFunction
// CHECK: %[[A:[0-9]+]] = OpLoad %ulong
// CHECK: %[[LOW:[0-9]+]] = OpBitwiseAnd %ulong %[[A]] %ulong_15
// CHECK: %[[OK:[0-9]+]] = Op{{INotEqual|IEqual}} %bool %[[LOW]] %ulong_0
// CHECK: OpBranchConditional %[[OK]]
// CHECK-DAG: OpLoad %v4half %{{[0-9]+}} Aligned 8
// CHECK-DAG: OpLoad %half %{{[0-9]+}} Aligned 2
// CHECK: OpFunctionEnd
