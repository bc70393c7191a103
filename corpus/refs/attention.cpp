// Reference for attention.metal: softmax(q.k * scale) weighted sum of v, kv head = h / (heads / kv_heads).
#include <cmath>
#include <vector>

#include "Corpus.h"

M2V_REF(sdpa_decode) {
  size_t H = c.i("heads"), KVH = c.i("kv_heads"), S = c.i("seq"), D = c.i("dim");
  double scale = c.s("scale");
  const auto &q = c.x("q"), &k = c.x("k"), &v = c.x("v");
  auto& o = c.y("o");
  for (size_t h = 0; h < H; ++h) {
    size_t kvh = h / (H / KVH);
    std::vector<double> s(S);
    double m = -INFINITY, l = 0;
    for (size_t t = 0; t < S; ++t) {
      double dot = 0;
      for (size_t d = 0; d < D; ++d) dot += q[h * D + d] * scale * k[(kvh * S + t) * D + d];
      s[t] = dot;
      m = std::max(m, dot);
    }
    for (size_t t = 0; t < S; ++t) l += std::exp(s[t] - m);
    for (size_t d = 0; d < D; ++d) {
      double acc = 0;
      for (size_t t = 0; t < S; ++t) acc += std::exp(s[t] - m) / l * v[(kvh * S + t) * D + d];
      o[h * D + d] = acc;
    }
  }
}
