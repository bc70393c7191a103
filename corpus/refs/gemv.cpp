// References for gemv.metal: y = W x, with W dequantized as scale * q + bias per group (q LSB-first in uint32).
#include <cmath>
#include <cstdint>

#include "Corpus.h"

M2V_REF(gemv) {
  const auto& w = c.x("w");
  const auto& x = c.x("x");
  auto& y = c.y("y");
  size_t in = x.size();
  for (size_t r = 0; r < y.size(); ++r) {
    double s = 0;
    for (size_t i = 0; i < in; ++i) s += w[r * in + i] * x[i];
    y[r] = s;
  }
}

M2V_REF(qmv) {
  const auto& wq = c.x("wq");
  const auto& x = c.x("x");
  auto& y = c.y("y");
  int bits = int(c.i("bits")), group = int(c.i("group"));
  size_t in = x.size(), perWord = 32 / bits, words = in / perWord, groups = in / group;
  for (size_t r = 0; r < y.size(); ++r) {
    double s = 0;
    for (size_t i = 0; i < in; ++i) {
      uint32_t word = uint32_t(wq[r * words + i / perWord]);
      uint32_t q = (word >> ((i % perWord) * bits)) & ((1u << bits) - 1);
      double w = c.x("scales")[r * groups + i / group] * q + c.x("biases")[r * groups + i / group];
      s += w * x[i];
    }
    y[r] = s;
  }
}
