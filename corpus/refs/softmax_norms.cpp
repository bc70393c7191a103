// References for softmax.metal and norms.metal, from the definitions (double precision).
#include <cmath>

#include "Corpus.h"

M2V_REF(softmax) {
  const auto& x = c.x("x");
  auto& y = c.y("y");
  size_t rows = c.i("rows"), cols = c.i("cols");
  for (size_t r = 0; r < rows; ++r) {
    double m = -INFINITY, s = 0;
    for (size_t i = 0; i < cols; ++i) m = std::max(m, x[r * cols + i]);
    for (size_t i = 0; i < cols; ++i) s += std::exp(x[r * cols + i] - m);
    for (size_t i = 0; i < cols; ++i) y[r * cols + i] = std::exp(x[r * cols + i] - m) / s;
  }
}

M2V_REF(layer_norm) {
  const auto& x = c.x("x");
  auto& y = c.y("y");
  size_t rows = c.i("rows"), cols = c.i("cols");
  double eps = c.s("eps");
  size_t ws = c.i("wstride");
  for (size_t r = 0; r < rows; ++r) {
    double mean = 0, var = 0;
    for (size_t i = 0; i < cols; ++i) mean += x[r * cols + i];
    mean /= cols;
    for (size_t i = 0; i < cols; ++i) var += (x[r * cols + i] - mean) * (x[r * cols + i] - mean);
    var /= cols;
    for (size_t i = 0; i < cols; ++i)
      y[r * cols + i] = (x[r * cols + i] - mean) / std::sqrt(var + eps) * c.x("w")[i * ws] + c.x("b")[i * ws];
  }
}

M2V_REF(rms_norm) {
  const auto& x = c.x("x");
  auto& y = c.y("y");
  size_t rows = c.i("rows"), cols = c.i("cols");
  double eps = c.s("eps");
  size_t ws = c.i("wstride");
  for (size_t r = 0; r < rows; ++r) {
    double ms = 0;
    for (size_t i = 0; i < cols; ++i) ms += x[r * cols + i] * x[r * cols + i];
    ms /= cols;
    for (size_t i = 0; i < cols; ++i) y[r * cols + i] = x[r * cols + i] / std::sqrt(ms + eps) * c.x("w")[i * ws];
  }
}
