// Reference for kernels/casts.metal: the value converted to the output dtype (round to nearest even, float->int
// truncation toward zero, out-of-range half -> inf).
#include <cmath>

#include "Corpus.h"

M2V_REF(cast) {
  const auto& x = c.x("x");
  auto& y = c.y("y");
  const std::string& t = c.expected.at("y").dtype;
  for (size_t i = 0; i < x.size(); ++i) {
    if (t == "i32") y[i] = std::trunc(x[i]);
    else y[i] = ::m2v::corpus::roundTo(t, x[i]);
  }
}
