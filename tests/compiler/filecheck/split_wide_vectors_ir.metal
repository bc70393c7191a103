// MODE: ir
// Rule (lowered IR, lower/SplitWideVectors.cpp): vectors of more than four lanes that are not bool vectors
// (`vec<half, 8>`, the register fragments of Metal 4 matrix kernels) have no SPIR-V type; a function that has one
// is scalarized, loads, stores and arithmetic included. No 8-lane vector reaches the SPIR-V emitter.
#include <metal_stdlib>
using namespace metal;
kernel void frag8(device const half* x [[buffer(0)]], device float* y [[buffer(1)]], uint gid [[thread_position_in_grid]]) {
  vec<half, 8> h = *(device const vec<half, 8>*)(x + 8 * gid);
  vec<float, 8> f = vec<float, 8>(h) * 2.0f;
#pragma clang loop unroll(disable)
  for (int k = 0; k < 8; k++) y[8 * gid + k] = f[k];
}
// CHECK-NOT: <8 x
// CHECK: fpext half
// CHECK: fmul float
// CHECK-NOT: <8 x
