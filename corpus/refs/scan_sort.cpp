// References for scan.metal and sort.metal.
#include <algorithm>
#include <numeric>
#include <vector>

#include "Corpus.h"

M2V_REF(scan) {
  const auto& x = c.x("x");
  auto& y = c.y("y");
  size_t n = c.i("n"), rows = x.size() / n;
  bool incl = c.i("inclusive");
  for (size_t r = 0; r < rows; ++r) {
    double s = 0;
    for (size_t i = 0; i < n; ++i) {
      if (incl) s += x[r * n + i];
      y[r * n + i] = s;
      if (!incl) s += x[r * n + i];
    }
  }
}

M2V_REF(sort_rows) {
  const auto& x = c.x("x");
  auto& y = c.y("y");
  size_t n = c.i("n");
  for (size_t r = 0; r < x.size() / n; ++r) {
    std::vector<double> v(x.begin() + r * n, x.begin() + (r + 1) * n);
    std::sort(v.begin(), v.end());
    std::copy(v.begin(), v.end(), y.begin() + r * n);
  }
}

// The k largest values of each row in descending order; equal values by ascending index.
M2V_REF(topk) {
  const auto& x = c.x("x");
  size_t n = c.i("n"), k = c.i("k");
  for (size_t r = 0; r < x.size() / n; ++r) {
    std::vector<size_t> ix(n);
    std::iota(ix.begin(), ix.end(), 0);
    std::stable_sort(ix.begin(), ix.end(), [&](size_t a, size_t b) { return x[r * n + a] > x[r * n + b]; });
    for (size_t j = 0; j < k; ++j) {
      c.y("vals")[r * k + j] = x[r * n + ix[j]];
      c.y("idx")[r * k + j] = double(ix[j]);
    }
  }
}
