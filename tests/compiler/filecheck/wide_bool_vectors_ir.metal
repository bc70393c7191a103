// MODE: ir
// Rule (lowered IR, lower/WideBoolVectors.cpp): a bool vector of more than four lanes (`vec<bool, 8>`, a mask
// fragment) becomes an integer with one bit per lane: the loop carries an i8, a lane is set by clearing and or-ing
// its bit and read back by a shift and a truncation. No <8 x i1> reaches the SPIR-V emitter.
#include <metal_stdlib>
using namespace metal;
kernel void mask8(device const bool* m [[buffer(0)]], device const float* x [[buffer(1)]], device float* y [[buffer(2)]],
                  constant uint& n [[buffer(3)]], uint gid [[thread_position_in_grid]]) {
  vec<bool, 8> frag;
#pragma clang loop unroll(disable)
  for (int k = 0; k < 8; k++) frag[k] = gid * 8 + k < n ? m[gid * 8 + k] : false;
#pragma clang loop unroll(disable)
  for (int k = 0; k < 8; k++) y[gid * 8 + k] = frag[k] ? x[gid * 8 + k] : 0.0f;
}
// CHECK-NOT: x i1>
// CHECK: phi i8
// CHECK: shl {{.*}}i8 1,
// CHECK: lshr {{.*}}i8
// CHECK: trunc i8 {{.*}} to i1
// CHECK-NOT: x i1>
