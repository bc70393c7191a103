// metal2vk compiler bug (found by the MLX front door; passes with the compiler of 2026-11-30 05:10): SPIR-V fails validation
//   "Header block '22[%22]' is contained in the loop construct headed by '20[%20]', but its merge block '24[%24]'
//    is not"
// for a thread-strided loop around a fixed-trip-count inner loop (the output loop of attention/softmax kernels).
// A runtime inner trip count, or no inner loop, compiles.
#include <metal_stdlib>
using namespace metal;
kernel void strided_outer(device const float* x [[buffer(0)]], device float* out [[buffer(1)]],
                          uint tid [[thread_position_in_grid]]) {
  for (int d = tid; d < 4; d += 32) {
    float num = 0.0f;
    for (int t = 0; t < 32; ++t) num += x[t];
    out[d] = num;
  }
}
