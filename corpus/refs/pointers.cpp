// References for pointers.metal.
#include <cmath>
#include <cstdint>
#include <cstring>

#include "Corpus.h"
#include "host_types.h"

M2V_REF(scale) {
  for (size_t i = 0; i < c.x("x").size(); ++i) c.y("y")[i] = c.x("x")[i] * c.s("s");
}

M2V_REF(row_stats) {
  size_t n = c.i("n"), rows = c.x("x").size() / n;
  for (size_t r = 0; r < rows; ++r) {
    const double* p = &c.x("x")[r * n];
    double s = 0, m = -INFINITY;
    for (size_t i = 0; i < n; ++i) s += p[i], m = std::max(m, p[i]);
    auto& o = c.y("out");
    o[4 * r] = s, o[4 * r + 1] = m, o[4 * r + 2] = p[0], o[4 * r + 3] = p[n - 1];
  }
}

M2V_REF(abs_inplace) {
  for (double& v : c.y("x")) v = std::fabs(v);
}

// Word i holds half bits lo = element 2i, hi = element 2i+1; output swaps them. NaN payloads compare as NaN, so
// rewrite NaN inputs as "not compared" (the kernel only moves bits).
M2V_REF(half2_swap) {
  const auto& in = c.x("in");
  auto& out = c.y("out");
  for (size_t i = 0; i < in.size(); ++i) {
    uint32_t w = uint32_t(in[i]);
    float lo = ::m2v::host::halfToFloat(uint16_t(w & 0xffff)), hi = ::m2v::host::halfToFloat(uint16_t(w >> 16));
    out[2 * i] = std::isnan(hi) ? NAN : hi;
    out[2 * i + 1] = std::isnan(lo) ? NAN : lo;
  }
}

M2V_REF(moe_gemv) {
  const auto& d = c.arr("dims");
  size_t in = d[0], out = d[1], T = c.x("ids").size();
  for (size_t t = 0; t < T; ++t) {
    const auto& W = c.x("w" + std::to_string(int(c.x("ids")[t])));
    for (size_t o = 0; o < out; ++o) {
      double s = 0;
      for (size_t i = 0; i < in; ++i) s += W[o * in + i] * c.x("x")[t * in + i];
      c.y("y")[t * out + o] = s;
    }
  }
}

M2V_REF(tg_select) {
  for (size_t g = 0; g < c.x("which").size(); ++g)
    for (size_t l = 0; l < 64; ++l)
      c.y("out")[g * 64 + l] = (c.x("which")[g] != 0 ? c.x("a") : c.x("b"))[g * 64 + 63 - l];
}
