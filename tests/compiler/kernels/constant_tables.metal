// ENTRIES: constant_tables
// Program-scope constant-address-space tables (float, int, a struct array, a 2-D table) indexed at run time.
#include <metal_stdlib>
using namespace metal;

constant float kGauss[5] = {0.0625f, 0.25f, 0.375f, 0.25f, 0.0625f};
constant int kOffsets[4] = {-2, -1, 1, 2};
constant half kHalfTable[4] = {0.5h, 1.0h, 1.5h, 2.0h};
struct Coef { float a; float b; };
constant Coef kCoefs[3] = {{1.0f, 0.0f}, {0.5f, 1.0f}, {2.0f, -1.0f}};
constant uint kMatrix[2][3] = {{1, 2, 3}, {4, 5, 6}};
constant constexpr float kPi = 3.14159265f;

kernel void constant_tables(device const float* in [[buffer(0)]], device float* out [[buffer(1)]],
                            constant uint& n [[buffer(2)]], uint gid [[thread_position_in_grid]]) {
  float s = 0.0f;
  for (int i = 0; i < 5; ++i) {
    int j = clamp(int(gid) + i - 2, 0, int(n) - 1);
    s += kGauss[i] * in[j];
  }
  s += float(kOffsets[gid & 3]) + float(kHalfTable[(gid >> 2) & 3]);
  uint c = gid % 3;
  s = s * kCoefs[c].a + kCoefs[c].b;
  out[gid] = s + float(kMatrix[gid & 1][c]) * kPi;
}
