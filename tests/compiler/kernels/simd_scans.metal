// ENTRIES: simd_scans
// Prefix sums/products inside a simdgroup (inclusive and exclusive), used for a stream compaction offset.
#include <metal_stdlib>
using namespace metal;

kernel void simd_scans(device const float* in [[buffer(0)]], device float* incl [[buffer(1)]],
                       device float* excl [[buffer(2)]], device uint* offsets [[buffer(3)]],
                       device int* prod [[buffer(4)]], uint gid [[thread_position_in_grid]]) {
  float x = in[gid];
  incl[gid] = simd_prefix_inclusive_sum(x);
  excl[gid] = simd_prefix_exclusive_sum(x) + float(simd_prefix_inclusive_product(half(x)));
  uint keep = x > 0.0f ? 1u : 0u;
  offsets[gid] = simd_prefix_exclusive_sum(keep);
  int k = int(gid & 3) + 1;
  prod[gid] = simd_prefix_inclusive_product(k) + simd_prefix_exclusive_product(k);
}
