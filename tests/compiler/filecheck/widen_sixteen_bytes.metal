// MODE: asm
// Rule (lower/WidenAccesses.cpp): eight adjacent 16-bit accesses of one thread (or sixteen 8-bit ones) become one
// 16-byte access on the checked path: SPIR-V has no 8-lane vectors, so it is a vector of four 32-bit words, each
// bitcast to two halves when loaded and built from two when stored.
#include <metal_stdlib>
using namespace metal;
kernel void scale8(device const half* a [[buffer(0)]], device half* c [[buffer(1)]], uint gid [[thread_position_in_grid]]) {
  uint i = 8 * gid;
  for (int k = 0; k < 8; ++k) c[i + k] = a[i + k] * half(k + 1);
}
// CHECK-LABEL: %main = OpFunction
// CHECK: OpBitwiseAnd %ulong %{{[0-9]+}} %ulong_15
// CHECK: %[[W:[0-9]+]] = OpLoad %v4uint %{{[0-9]+}} Aligned 16
// CHECK: %[[E:[0-9]+]] = OpCompositeExtract %uint %[[W]]
// CHECK: OpBitcast %v2half %[[E]]
// CHECK: %[[P:[0-9]+]] = OpBitcast %uint %{{[0-9]+}}
// CHECK: %[[S:[0-9]+]] = OpCompositeInsert %v4uint
// CHECK: OpStore %{{[0-9]+}} %{{[0-9]+}} Aligned 16
// CHECK: OpFunctionEnd
