// References for recurrent.metal, from the update equations.
#include <cmath>
#include <vector>

#include "Corpus.h"

M2V_REF(gated_delta) {
  const size_t H = 4, Dk = 32, Dv = c.i("Dv");
  auto& S = c.y("state");
  auto& o = c.y("o");
  for (size_t h = 0; h < H; ++h) {
    double g = c.x("g")[h], b = c.x("beta")[h];
    for (size_t col = 0; col < Dv; ++col) {
      double kv = 0;
      for (size_t i = 0; i < Dk; ++i) kv += g * S[(h * Dk + i) * Dv + col] * c.x("k")[h * Dk + i];
      double delta = b * (c.x("v")[h * Dv + col] - kv);
      double out = 0;
      for (size_t i = 0; i < Dk; ++i) {
        double& s = S[(h * Dk + i) * Dv + col];
        s = g * s + c.x("k")[h * Dk + i] * delta;
        out += s * c.x("q")[h * Dk + i];
      }
      o[h * Dv + col] = out;
    }
  }
}

M2V_REF(ssm_step) {
  size_t ch = c.i("channels"), heads = c.x("x").size() / ch, N = 16;
  auto& st = c.y("state");
  auto& y = c.y("y");
  for (size_t hd = 0; hd < heads; ++hd)
    for (size_t j = 0; j < ch; ++j) {
      size_t idx = hd * ch + j;
      double x = c.x("x")[idx], dt = c.x("dt")[idx], a = std::exp(dt * c.x("A")[idx]), acc = 0;
      for (size_t n = 0; n < N; ++n) {
        double& h = st[idx * N + n];
        h = a * h + dt * c.x("B")[hd * N + n] * x;
        acc += c.x("C")[hd * N + n] * h;
      }
      y[idx] = acc + c.x("D")[j] * x;
    }
}

M2V_REF(rwkv_step) {
  size_t D = 64, H = c.x("r").size() / D;
  auto& S = c.y("state");
  auto& o = c.y("o");
  for (size_t h = 0; h < H; ++h)
    for (size_t j = 0; j < D; ++j) {
      double acc = 0, vj = c.x("v")[h * D + j];
      for (size_t i = 0; i < D; ++i) {
        double kv = c.x("k")[h * D + i] * vj;
        double& s = S[(h * D + i) * D + j];
        acc += c.x("r")[h * D + i] * (s + c.x("u")[h * D + i] * kv);
        s = c.x("w")[h * D + i] * s + kv;
      }
      o[h * D + j] = acc;
    }
}
