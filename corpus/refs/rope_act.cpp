// References for rope_act.metal: rotation by angle pos * base^(-2i/D), SiLU/GELU(erf)/GELU(tanh) times up.
#include <cmath>

#include "Corpus.h"

M2V_REF(rope) {
  const auto& x = c.x("x");
  auto& y = c.y("y");
  const auto& d = c.arr("dims");
  size_t T = d[0], H = d[1], D = d[2];
  bool trad = c.i("traditional");
  double base = c.s("base");
  for (size_t t = 0; t < T; ++t)
    for (size_t h = 0; h < H; ++h)
      for (size_t i = 0; i < D / 2; ++i) {
        double theta = double(c.i("offset") + int64_t(t)) * std::pow(base, -2.0 * double(i) / double(D));
        size_t row = (t * H + h) * D, i1 = trad ? 2 * i : i, i2 = trad ? 2 * i + 1 : i + D / 2;
        double a = x[row + i1], b = x[row + i2];
        y[row + i1] = a * std::cos(theta) - b * std::sin(theta);
        y[row + i2] = a * std::sin(theta) + b * std::cos(theta);
      }
}

M2V_REF(gated_act) {
  const auto& gu = c.x("gu");
  auto& y = c.y("y");
  size_t H = c.i("hidden"), rows = y.size() / H;
  int act = c.i("act");
  for (size_t r = 0; r < rows; ++r)
    for (size_t j = 0; j < H; ++j) {
      double g = gu[r * 2 * H + j], u = gu[r * 2 * H + H + j], a;
      if (act == 0) a = g / (1 + std::exp(-g));
      else if (act == 1) a = 0.5 * g * (1 + std::erf(g / std::sqrt(2.0)));
      else a = 0.5 * g * (1 + std::tanh(std::sqrt(2.0 / M_PI) * (g + 0.044715 * g * g * g)));
      y[r * H + j] = a * u;
    }
}
