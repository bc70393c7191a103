// References for conv.metal.
#include <cmath>

#include "Corpus.h"

M2V_REF(conv1d) {
  const auto& p = c.arr("p");
  int L = int(p[0]), C = int(p[1]), K = int(p[2]), dil = int(p[3]), pad = (K - 1) * dil / 2;
  auto& y = c.y("y");
  for (int t = 0; t < L; ++t)
    for (int ch = 0; ch < C; ++ch) {
      double s = 0;
      for (int k = 0; k < K; ++k) {
        int src = t + k * dil - pad;
        if (src >= 0 && src < L) s += c.x("x")[src * C + ch] * c.x("w")[k * C + ch];
      }
      y[t * C + ch] = s;
    }
}

// Bilinear sampling with align_corners = false: pixel centres at (i + 0.5) / size in [0, 1]; outside -> 0.
M2V_REF(grid_sample) {
  const auto& d = c.arr("dims");
  int H = int(d[0]), W = int(d[1]), C = int(d[2]), n = int(d[3]);
  const auto& x = c.x("x");
  const auto& g = c.x("grid");
  auto& out = c.y("out");
  for (int o = 0; o < n; ++o) {
    double ix = ((g[2 * o] + 1) * W - 1) / 2, iy = ((g[2 * o + 1] + 1) * H - 1) / 2;
    int x0 = int(std::floor(ix)), y0 = int(std::floor(iy));
    double fx = ix - x0, fy = iy - y0;
    for (int ch = 0; ch < C; ++ch) {
      double acc = 0;
      for (int dy = 0; dy < 2; ++dy)
        for (int dx = 0; dx < 2; ++dx) {
          int xx = x0 + dx, yy = y0 + dy;
          if (xx >= 0 && xx < W && yy >= 0 && yy < H)
            acc += (dx ? fx : 1 - fx) * (dy ? fy : 1 - fy) * x[(yy * W + xx) * C + ch];
        }
      out[o * C + ch] = acc;
    }
  }
}
