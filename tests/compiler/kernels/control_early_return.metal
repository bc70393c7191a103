// ENTRIES: control_early_return
// Early returns (bounds check at the top, a return inside a loop) followed by simd reductions and barriers in the
// live threads, as MLX kernels do.
#include <metal_stdlib>
using namespace metal;

kernel void control_early_return(device const float* in [[buffer(0)]], device float* out [[buffer(1)]],
                                 constant uint& n [[buffer(2)]], uint gid [[thread_position_in_grid]],
                                 uint lane [[thread_index_in_simdgroup]]) {
  if (gid >= n) return;
  float v = in[gid];
  for (uint i = 0; i < 8; ++i) {
    if (in[(gid + i) % n] == 12345.0f) {
      out[gid] = -1.0f;
      return;
    }
  }
  if (isnan(v)) {
    out[gid] = 0.0f;
    return;
  }
  float s = simd_sum(v);
  if (lane == 0) out[gid] = s;
}
