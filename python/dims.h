// Grid and threadgroup sizes from Python: a sequence of 1 to 3 non-negative integers below 2^32, missing entries 1.
// Shared by metal_kernel's grid/threadgroup (python/module.cpp) and Stream's dispatches (python/library.cpp).
#pragma once

#include <pybind11/pybind11.h>

#include <array>
#include <cstdint>
#include <string>

namespace m2v::python {

// `context` prefixes the error messages ("[metal_kernel] " for MLX's wording).
inline std::array<uint32_t, 3> dims3(const pybind11::handle& obj, const char* what, const char* context = "") {
  std::array<uint32_t, 3> d{1, 1, 1};
  auto seq = pybind11::reinterpret_borrow<pybind11::sequence>(obj);
  if (seq.size() < 1 || seq.size() > 3)
    throw pybind11::value_error(std::string(context) + "`" + what + "` must have 1 to 3 entries");
  for (size_t i = 0; i < seq.size(); ++i) {
    long long v = seq[i].cast<long long>();
    if (v < 0 || v > UINT32_MAX)
      throw pybind11::value_error(std::string(context) + "`" + what + "` entries must be in [0, 2^32)");
    d[i] = uint32_t(v);
  }
  return d;
}

}  // namespace m2v::python
