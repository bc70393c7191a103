// References for kernels/reductions.metal: sums/max/argmax/logsumexp of each row, sums of each column (in double).
#include <cmath>

#include "Corpus.h"

M2V_REF(row_reduce) {
  const auto& x = c.x("x");
  auto& y = c.y("y");
  size_t rows = c.i("rows"), cols = c.i("cols");
  int op = int(c.s("op"));
  for (size_t r = 0; r < rows; ++r) {
    const double* p = &x[r * cols];
    double s = 0, m = -INFINITY;
    size_t am = 0;
    for (size_t i = 0; i < cols; ++i) {
      s += p[i];
      if (p[i] > m) m = p[i], am = i;
    }
    if (op == 0) y[r] = s;
    else if (op == 1) y[r] = m;
    else if (op == 2) y[r] = double(am);
    else {
      double e = 0;
      for (size_t i = 0; i < cols; ++i) e += std::exp(p[i] - m);
      y[r] = m + std::log(e);
    }
  }
}

M2V_REF(col_sum) {
  const auto& x = c.x("x");
  auto& y = c.y("y");
  size_t rows = c.arr("shape")[0], cols = c.arr("shape")[1];
  for (size_t j = 0; j < cols; ++j) {
    double s = 0;
    for (size_t r = 0; r < rows; ++r) s += x[r * cols + j];
    y[j] = s;
  }
}
