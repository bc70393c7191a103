// MODE: asm
// Rule (lower/Pipeline.cpp, LLVM's sinking of common instructions off): a whole-block branch and an element-by-element
// tail branch that both end by reading x[3] keep that read in each branch, so the whole-block branch's four reads
// stay in one block and become one 8-byte read on the checked path (as in MLX's rms_looped and layer_norm_looped).
#include <metal_stdlib>
using namespace metal;
kernel void sum_squares(device const half* x [[buffer(0)]], device float* out [[buffer(1)]],
                        constant uint& n [[buffer(2)]], uint gid [[threadgroup_position_in_grid]],
                        uint lid [[thread_position_in_threadgroup]], uint lsize [[threads_per_threadgroup]]) {
  float acc = 0;
  x += gid * size_t(n) + lid * 4;
  for (uint r = 0; r < n; r += lsize * 4) {
    if (r + lid * 4 + 4 <= n) {
      for (int i = 0; i < 4; i++) {
        float v = x[i + r];
        acc += v * v;
      }
    } else {
      for (int i = 0; i < 4; i++) {
        if (r + lid * 4 + i < n) {
          float v = x[i + r];
          acc += v * v;
        }
      }
    }
  }
  out[gid * lsize + lid] = acc;
}
// CHECK-LABEL: %main = OpFunction
// CHECK: OpBitwiseAnd %ulong %{{[0-9]+}} %ulong_15
// CHECK: OpLoad %v4half %{{[0-9]+}} Aligned 8
// CHECK: OpFunctionEnd
