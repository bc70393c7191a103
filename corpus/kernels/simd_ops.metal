// simdgroup / quadgroup data movement and votes as kernels use them: a warp-level transpose-free reduction with
// shuffle_xor butterflies, broadcast of a per-simdgroup value, ballot counting, and a quad (2x2 pixel) average.
#include <metal_stdlib>
using namespace metal;

// Butterfly all-reduce: every lane ends with the simdgroup's sum; out[i] = x[i] / sum(simdgroup).
[[kernel]] void simd_normalize_xor(const device float* x [[buffer(0)]], device float* y [[buffer(1)]],
                                   uint i [[thread_position_in_grid]], uint lane [[thread_index_in_simdgroup]]) {
  float v = x[i], s = v;
  for (ushort m = 16; m > 0; m >>= 1) s += simd_shuffle_xor(s, m);
  y[i] = v / s;
}

// y[i] = x[i] - x[first lane of its simdgroup]; count of positive values per simdgroup via ballot.
[[kernel]] void simd_broadcast_ballot(const device float* x [[buffer(0)]], device float* y [[buffer(1)]],
                                      device uint* counts [[buffer(2)]], uint i [[thread_position_in_grid]],
                                      uint lane [[thread_index_in_simdgroup]]) {
  float v = x[i];
  float first = simd_broadcast_first(v);
  y[i] = v - first;
  simd_vote vote = simd_ballot(v > 0);
  uint n = popcount(uint(simd_vote::vote_t(vote) & 0xffffffffu));
  if (lane == 0) counts[i / 32] = n;
}

// Quad average: each quad of 4 consecutive threads (a 2x2 pixel block) writes the block mean to every lane.
[[kernel]] void quad_mean(const device float* x [[buffer(0)]], device float* y [[buffer(1)]],
                          uint i [[thread_position_in_grid]]) {
  float v = x[i];
  float s = quad_sum(v);
  y[i] = s * 0.25f;
}

// Rotate: y[i] = x[simdgroup base + (lane + 1) % 32].
[[kernel]] void simd_rotate(const device int* x [[buffer(0)]], device int* y [[buffer(1)]],
                            uint i [[thread_position_in_grid]]) {
  y[i] = simd_shuffle_rotate_down(x[i], ushort(1));
}
