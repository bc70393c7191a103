// MODE: ir
// Rule (lowered IR, lower/WidenOddIntegers.cpp): LLVM's optimizer recognises this bit permutation of five bits as
// `bitreverse.i5`; SPIR-V has no 5-bit integer, so the value is computed in 8 bits (zero above bit 4) and the
// reversal is an 8-bit bit reverse shifted down by 3. No i5 reaches the SPIR-V emitter.
#include <metal_stdlib>
using namespace metal;
kernel void reverse5(device uint* y [[buffer(0)]], uint gid [[thread_position_in_grid]]) {
  uint v = gid;
  y[gid] = ((v & 1u) << 4) | ((v & 2u) << 2) | (v & 4u) | ((v & 8u) >> 2) | ((v & 16u) >> 4);
}
// CHECK-NOT: i5 %
// CHECK: call i8 @llvm.bitreverse.i8
// CHECK: lshr {{.*}}i8 {{.*}}, 3
// CHECK-NOT: i5 %
