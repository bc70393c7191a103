// MODE: asm
// Rule (lower/KeepLoopHints.cpp, spirv/Emitter.cpp): a loop the source asks not to unroll (`#pragma clang loop
// unroll(disable)`, MLX's STEEL_PRAGMA_NO_UNROLL) carries DontUnroll in its OpLoopMerge, through structurization
// (which drops LLVM's loop metadata); a loop without the pragma carries no loop control.
#include <metal_stdlib>
using namespace metal;
kernel void two_loops(device float* a [[buffer(0)]], constant int& n [[buffer(1)]],
                      uint i [[thread_position_in_grid]]) {
  float s = 0;
  _Pragma("clang loop unroll(disable)")
  for (int j = 0; j < 8; ++j) {
    if (a[i * 8 + j] > 0) s += a[j];
  }
  for (int j = 0; j < n; ++j) s *= a[j];
  a[i] = s;
}
// CHECK-LABEL: %main = OpFunction
// CHECK: OpLoopMerge %{{[0-9]+}} %{{[0-9]+}} DontUnroll
// CHECK: OpLoopMerge %{{[0-9]+}} %{{[0-9]+}} None
// CHECK: OpFunctionEnd
