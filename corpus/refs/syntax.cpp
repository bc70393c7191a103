// References for the syntax corpus (corpus/syntax): what each kernel computes, written from its comment.
#include <cmath>

#include "Corpus.h"

// y = (x * scale [+ bias]) [* gain]
M2V_REF(syntax_affine) {
  bool bias = c.has("has_bias") && c.s("has_bias") != 0;
  double gain = c.has("gain") ? c.s("gain") : 1.0;
  const auto& x = c.x("x");
  auto& y = c.y("y");
  size_t n = c.has("n") ? size_t(c.i("n")) : x.size();
  for (size_t i = 0; i < n; ++i) y[i] = (x[i] * c.s("scale") + (bias ? c.x("bias")[i] : 0.0)) * gain;
}

// y = x * factor
M2V_REF(syntax_multiply) {
  const auto& x = c.x("x");
  auto& y = c.y("y");
  for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] * c.s("factor");
}

// cells[i] += 1; y[i] = cells[i] (before) + i + 10 k + 5
M2V_REF(syntax_methods) {
  const auto& cells = c.x("cells");
  auto& after = c.y("cells");
  auto& y = c.y("y");
  double k = c.x("k")[0];
  for (size_t i = 0; i < cells.size(); ++i) {
    after[i] = cells[i] + 1.0;
    y[i] = cells[i] + double(i) + 10.0 * k + 5.0;
  }
}

// y = erf(x) + erfc(h) + log1p(h) + expm1(x / 4) + remainder(x, 1.5)
M2V_REF(syntax_user_math) {
  const auto& x = c.x("x");
  const auto& h = c.x("h");
  auto& y = c.y("y");
  for (size_t i = 0; i < x.size(); ++i)
    y[i] = std::erf(x[i]) + std::erfc(h[i]) + std::log1p(h[i]) + std::expm1(x[i] / 4.0) + std::remainder(x[i], 1.5);
}

// [simd-type flags (float, half, int4 are; long and a struct are not), lowest, max + index, half's max + 1]
M2V_REF(syntax_user_traits) {
  auto& out = c.y("out");
  out[0] = 1 + 2 + 4;
  out[1] = -3.0;
  out[2] = 7.0 + 1.0;
  out[3] = 65504.0 + 1.0;
}

// y = m ? x : -1
M2V_REF(syntax_mask_select) {
  const auto& x = c.x("x");
  const auto& m = c.x("m");
  auto& y = c.y("y");
  for (size_t i = 0; i < x.size(); ++i) y[i] = m[i] != 0 ? x[i] : -1.0;
}

// round half away from zero (std::round's rule)
M2V_REF(syntax_round) {
  const auto& x = c.x("x");
  auto& y = c.y("y");
  for (size_t i = 0; i < x.size(); ++i) y[i] = std::round(x[i]);
}

// floor(x) + 1 (exact in bfloat for |x| <= 50)
M2V_REF(syntax_floor_plus_one) {
  const auto& x = c.x("x");
  auto& y = c.y("y");
  for (size_t i = 0; i < x.size(); ++i) y[i] = std::floor(x[i]) + 1.0;
}

// y[2g] = sum of x[g n + i] over even i, y[2g + 1] over odd i
M2V_REF(syntax_alternate) {
  const auto& x = c.x("x");
  auto& y = c.y("y");
  size_t n = size_t(c.i("n")), rows = x.size() / n;
  for (size_t g = 0; g < rows; ++g) {
    double even = 0, odd = 0;
    for (size_t i = 0; i < n; ++i) (i % 2 ? odd : even) += x[g * n + i];
    y[2 * g] = even;
    y[2 * g + 1] = odd;
  }
}

// y[i] = x[i] * scale, plus (use_sum) the sum of x * scale over i's group of 64
M2V_REF(syntax_group_sum) {
  const auto& x = c.x("x");
  auto& y = c.y("y");
  bool sum = c.s("use_sum") != 0;
  for (size_t g = 0; g < x.size() / 64; ++g) {
    double s = 0;
    for (size_t t = 0; t < 64; ++t) s += x[g * 64 + t] * c.s("scale");
    for (size_t t = 0; t < 64; ++t) y[g * 64 + t] = x[g * 64 + t] * c.s("scale") + (sum ? s : 0.0);
  }
}

// A = x of the group, B = 2 A: y[64 g + t] = sum_k (t odd ? B : A)[t % 8 + 8 k] + sum_k A[8 (t / 8) + k], k < n
// (tg_tile walks the row backwards from its end: the same sum)
M2V_REF(syntax_tg_walk) {
  const auto& x = c.x("x");
  auto& y = c.y("y");
  size_t n = size_t(c.i("n"));
  for (size_t g = 0; g < x.size() / 64; ++g)
    for (size_t t = 0; t < 64; ++t) {
      const double* a = &x[g * 64];
      double s = 0, r = 0;
      for (size_t k = 0; k < n; ++k) s += a[t % 8 + 8 * k] * ((t & 1) ? 2.0 : 1.0);
      for (size_t k = 0; k < n; ++k) r += a[(t / 8) * 8 + k];
      y[g * 64 + t] = s + r;
    }
}
