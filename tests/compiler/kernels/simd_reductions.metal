// ENTRIES: simd_reductions
// simd_sum/product/min/max/and/or/xor over float, half, int, uint and vectors.
#include <metal_stdlib>
using namespace metal;

kernel void simd_reductions(device const float* f [[buffer(0)]], device const int* i [[buffer(1)]],
                            device const uint* u [[buffer(2)]], device const half4* h [[buffer(3)]],
                            device float* out [[buffer(4)]], device int* iout [[buffer(5)]],
                            device uint* uout [[buffer(6)]], device half4* hout [[buffer(7)]],
                            uint gid [[thread_position_in_grid]], uint lane [[thread_index_in_simdgroup]]) {
  float x = f[gid];
  float s = simd_sum(x) + simd_product(x) + simd_min(x) + simd_max(x);
  int y = i[gid];
  int si = simd_sum(y) + simd_min(y) + simd_max(y) + simd_and(y) + simd_or(y) + simd_xor(y) + simd_product(y);
  uint z = u[gid];
  uint su = simd_sum(z) + simd_min(z) + simd_max(z) + simd_and(z) + simd_or(z) + simd_xor(z);
  half4 hv = simd_sum(h[gid]) + simd_max(h[gid]) + simd_min(h[gid]);
  float2 v2 = simd_sum(float2(x, -x));
  if (lane == 0) {
    out[gid / 32] = s + v2.x;
    iout[gid / 32] = si;
    uout[gid / 32] = su;
    hout[gid / 32] = hv;
  }
}
