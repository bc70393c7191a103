// MODE: asm
// Rule (lower/WidenAccesses.cpp): adjacent stores of one thread become one vector store on the checked path, like
// loads: four floats at a multiple of 4 elements are one 16-byte store (Aligned 16) when the buffer address is a
// multiple of 16; the other path stores them one by one.
#include <metal_stdlib>
using namespace metal;
kernel void widen_device_stores(device const float* a [[buffer(0)]], device float* c [[buffer(1)]],
                                uint gid [[thread_position_in_grid]]) {
  float x = a[gid];
  uint i = 4 * gid;
  c[i] = x;
  c[i + 1] = x * 2.0f;
  c[i + 2] = x * 3.0f;
  c[i + 3] = x * 4.0f;
}
// CHECK-LABEL: %main = OpFunction
// CHECK: OpBitwiseAnd %ulong %{{[0-9]+}} %ulong_15
// CHECK-DAG: OpConvertUToPtr %_ptr_PhysicalStorageBuffer_v4float
// CHECK-DAG: OpStore %{{[0-9]+}} %{{[0-9]+}} Aligned 16
// CHECK-DAG: OpStore %{{[0-9]+}} %{{[0-9]+}} Aligned 4
// CHECK: OpFunctionEnd
