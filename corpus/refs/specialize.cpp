// Reference for specialize.metal: act(alpha * x W^T + b) with the function constants as given.
#include <algorithm>

#include "Corpus.h"

M2V_REF(linear_fc) {
  const auto& d = c.arr("dims");
  size_t in = d[0], out = d[1], rows = c.x("x").size() / in;
  bool bias = c.s("has_bias") != 0, relu = c.s("apply_relu") != 0;
  double alpha = c.has("alpha") ? c.s("alpha") : 1.0;
  for (size_t r = 0; r < rows; ++r)
    for (size_t o = 0; o < out; ++o) {
      double s = 0;
      for (size_t i = 0; i < in; ++i) s += c.x("x")[r * in + i] * c.x("w")[o * in + i];
      s *= alpha;
      if (bias) s += c.x("bias")[o];
      if (relu) s = std::max(s, 0.0);
      c.y("y")[r * out + o] = s;
    }
}

M2V_REF(scale_gain) {
  double g = c.has("gain") ? c.s("gain") : 1.0;
  for (size_t i = 0; i < c.x("x").size(); ++i) c.y("y")[i] = c.x("x")[i] * g;
}
