// References for simd_ops.metal (simdgroups of 32 consecutive threads, quads of 4).
#include "Corpus.h"

M2V_REF(simd_normalize) {
  const auto& x = c.x("x");
  for (size_t g = 0; g < x.size(); g += 32) {
    double s = 0;
    for (size_t l = 0; l < 32; ++l) s += x[g + l];
    for (size_t l = 0; l < 32; ++l) c.y("y")[g + l] = x[g + l] / s;
  }
}

M2V_REF(simd_broadcast_ballot) {
  const auto& x = c.x("x");
  for (size_t g = 0; g < x.size(); g += 32) {
    double n = 0;
    for (size_t l = 0; l < 32; ++l) {
      c.y("y")[g + l] = x[g + l] - x[g];
      n += x[g + l] > 0;
    }
    c.y("counts")[g / 32] = n;
  }
}

M2V_REF(quad_mean) {
  const auto& x = c.x("x");
  for (size_t g = 0; g < x.size(); g += 4)
    for (size_t l = 0; l < 4; ++l) c.y("y")[g + l] = (x[g] + x[g + 1] + x[g + 2] + x[g + 3]) / 4;
}

M2V_REF(simd_rotate) {
  const auto& x = c.x("x");
  for (size_t i = 0; i < x.size(); ++i) c.y("y")[i] = x[(i / 32) * 32 + (i % 32 + 1) % 32];
}
