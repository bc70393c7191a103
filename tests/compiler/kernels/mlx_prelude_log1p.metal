// ENTRIES: prelude_log1p
// The prelude of mx.fast.metal_kernel bodies declares MLX's global log1p (float and bfloat16_t); Apple's metal::
// has no log1p, so ours must not depend on one there.
#include <mlx_prelude>

kernel void prelude_log1p(device const float* x [[buffer(0)]], device float* y [[buffer(1)]],
                          uint i [[thread_position_in_grid]]) {
  y[i] = log1p(x[i]) + static_cast<float>(log1p(static_cast<bfloat16_t>(x[i])));
}
