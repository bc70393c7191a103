// metal2vk compiler bug (found by the MLX front door; passes with the compiler of 2026-11-30 05:15): SPIR-V
// fails validation
//   "Header block '%22' is contained in the loop construct headed by '%20', but its merge block '%24' is not"
// for a thread-strided loop with a run-time bound around a fixed-trip-count inner loop (the key loop of an
// attention-decode kernel). strided_loop_fixed_inner_loop.metal (constant outer bound) compiles since.
#include <metal_stdlib>
using namespace metal;
kernel void strided_runtime_bound(device const float* x [[buffer(0)]], constant int& L [[buffer(1)]],
                                  device float* out [[buffer(2)]], uint tid [[thread_position_in_grid]]) {
  float acc = 0.0f;
  for (int j = tid; j < L; j += 32) {
    float s = 0.0f;
    for (int d = 0; d < 32; ++d) s += x[(j * 32 + d) % 128];
    acc += s;
  }
  out[tid] = acc;
}
