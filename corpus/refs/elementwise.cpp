// References for kernels/elementwise.metal and casts.metal, written from what each op means.
#include <cmath>

#include "Corpus.h"

namespace {
// Memory offset of linear element `elem` of a row-major `shape` under `strides` (NumPy/MLX strided view).
int64_t loc(uint64_t elem, const std::vector<double>& shape, const double* strides) {
  int64_t off = 0;
  for (int i = int(shape.size()) - 1; i >= 0; --i) {
    off += int64_t(elem % uint64_t(shape[i])) * int64_t(strides[i]);
    elem /= uint64_t(shape[i]);
  }
  return off;
}
}  // namespace

M2V_REF(unary) {
  const auto& x = c.x("x");
  auto& y = c.y("y");
  int op = int(c.s("op"));
  for (size_t i = 0; i < x.size(); ++i) {
    if (op == 0) y[i] = std::exp(x[i]);
    else if (op == 1) y[i] = 1.0 / (1.0 + std::exp(-x[i]));
    else y[i] = -x[i];
  }
}

M2V_REF(binary_g) {
  const auto& a = c.x("a");
  const auto& b = c.x("b");
  auto& out = c.y("c");
  const auto& shape = c.arr("shape");
  int op = int(c.s("op"));
  for (size_t e = 0; e < out.size(); ++e) {
    double u = a[loc(e, shape, c.arr("as").data())], v = b[loc(e, shape, c.arr("bs").data())];
    out[e] = op == 0 ? u + v : op == 1 ? u * v : std::max(u, v);
  }
}

M2V_REF(where_g) {
  const auto& shape = c.arr("shape");
  const auto& st = c.arr("strides");
  size_t nd = shape.size();
  auto& out = c.y("out");
  for (size_t e = 0; e < out.size(); ++e)
    out[e] = c.x("cond")[loc(e, shape, &st[0])] != 0 ? c.x("a")[loc(e, shape, &st[nd])] : c.x("b")[loc(e, shape, &st[2 * nd])];
}
