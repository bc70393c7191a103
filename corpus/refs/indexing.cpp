// References for indexing.metal.
#include <algorithm>
#include <cstdint>

#include "Corpus.h"

M2V_REF(gather) {
  const auto& t = c.x("table");
  const auto& ix = c.x("idx");
  auto& out = c.y("out");
  size_t dim = c.i("dim");
  for (size_t r = 0; r < ix.size(); ++r)
    for (size_t j = 0; j < dim; ++j) out[r * dim + j] = t[size_t(ix[r]) * dim + j];
}

M2V_REF(scatter_add) {
  const auto& u = c.x("upd");
  const auto& ix = c.x("idx");
  auto& out = c.y("out");  // starts as the initial contents
  size_t dim = c.i("dim");
  for (size_t r = 0; r < ix.size(); ++r)
    for (size_t j = 0; j < dim; ++j) out[size_t(ix[r]) * dim + j] += u[r * dim + j];
}

M2V_REF(histogram) {
  const auto& v = c.x("v");
  auto& bins = c.y("bins");
  uint64_t nb = c.i("nbins");
  for (double x : v) bins[uint64_t(x) % nb] += 1;
}

M2V_REF(segment_max) {
  const auto& v = c.x("v");
  const auto& s = c.x("seg");
  auto& out = c.y("out");
  for (size_t i = 0; i < v.size(); ++i) out[size_t(s[i])] = std::max(out[size_t(s[i])], v[i]);
}
