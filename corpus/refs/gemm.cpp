// Reference for gemm.metal: C = A B (+ bias per column when a bias buffer exists).
#include "Corpus.h"

M2V_REF(gemm) {
  const auto& a = c.x("a");
  const auto& b = c.x("b");
  auto& out = c.y("c");
  size_t M = c.i("M"), N = c.i("N"), K = c.i("K");
  bool bias = c.in.count("bias");
  for (size_t i = 0; i < M; ++i)
    for (size_t j = 0; j < N; ++j) {
      double s = bias ? c.x("bias")[j] : 0.0;
      for (size_t k = 0; k < K; ++k) s += a[i * K + k] * b[k * N + j];
      out[i * N + j] = s;
    }
}
