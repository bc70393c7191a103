// Force-included into MLX's mlx/backend/metal/fft.cpp only (cmake/mlx/CMakeLists.txt). That file returns
// `std::make_tuple(w_k, w_q)` from a function declared to return std::pair<array, array>: libc++ (Apple's C++
// library) converts a two-element tuple to a pair, libstdc++ (Linux's) has no such conversion. This overload, an
// exact match for two array lvalues, builds the pair directly; every other make_tuple call is untouched.
#pragma once

#include <utility>

#include "mlx/array.h"

namespace std {
inline pair<mlx::core::array, mlx::core::array> make_tuple(mlx::core::array& first, mlx::core::array& second) {
  return {first, second};
}
}  // namespace std
