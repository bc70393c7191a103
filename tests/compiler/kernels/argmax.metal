// ENTRIES: argmax_float
// Arg-max along rows: (value, index) pairs reduced with simd_max + simd_ballot-style tie-breaking via shuffles.
#include <metal_stdlib>
using namespace metal;

struct IndexValue { float v; uint i; };

static IndexValue better(IndexValue a, IndexValue b) {
  return (b.v > a.v || (b.v == a.v && b.i < a.i)) ? b : a;
}

kernel void argmax_float(device const float* x [[buffer(0)]], device uint* out [[buffer(1)]],
                         constant uint& axis [[buffer(2)]], uint row [[threadgroup_position_in_grid]],
                         uint lane [[thread_index_in_simdgroup]]) {
  IndexValue best = {-INFINITY, 0u};
  for (uint i = lane; i < axis; i += 32) best = better(best, IndexValue{x[row * axis + i], i});
  for (ushort off = 16; off > 0; off >>= 1) {
    IndexValue other = {simd_shuffle_down(best.v, off), simd_shuffle_down(best.i, off)};
    best = better(best, other);
  }
  if (lane == 0) out[row] = best.i;
}
