// References for metal_kernel_style.metal.
#include <cmath>

#include "Corpus.h"

M2V_REF(strided_exp) {
  const auto& sh = c.arr("shape");
  const auto& st = c.arr("strides");
  auto& y = c.y("y");
  for (size_t e = 0; e < y.size(); ++e) {
    size_t rem = e;
    int64_t loc = 0;
    for (int i = int(sh.size()) - 1; i >= 0; --i) {
      loc += int64_t(rem % size_t(sh[i])) * int64_t(st[i]);
      rem /= size_t(sh[i]);
    }
    y[e] = std::exp(c.x("x")[loc]);
  }
}

M2V_REF(swish_bias) {
  for (size_t i = 0; i < c.x("x").size(); ++i) {
    double v = c.x("x")[i];
    c.y("y")[i] = v / (1 + std::exp(-v)) + c.x("bias")[i % 64];
  }
}

M2V_REF(block_dot) {
  auto& p = c.y("partial");
  for (size_t g = 0; g < p.size(); ++g) {
    double s = 0;
    for (size_t i = 0; i < 256; ++i) s += c.x("a")[g * 256 + i] * c.x("b")[g * 256 + i];
    p[g] = s;
  }
}
