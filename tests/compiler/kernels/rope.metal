// ENTRIES: rope_float rope_half
// Rotary position embedding: 2-D grid over (pair, position), sin/cos of a frequency, traditional and split layouts
// chosen by a function constant.
#include <metal_stdlib>
using namespace metal;

constant bool traditional [[function_constant(0)]];

template <typename T>
[[kernel]] void rope(device const T* in [[buffer(0)]], device T* out [[buffer(1)]], constant int& offset [[buffer(2)]],
                     constant float& base [[buffer(3)]], constant uint& dims [[buffer(4)]],
                     uint2 pos [[thread_position_in_grid]], uint2 grid [[threads_per_grid]]) {
  uint pair = pos.x, row = pos.y;
  float theta = float(int(row) + offset) * exp2(-float(pair) / float(dims / 2) * log2(base));
  float c = cos(theta), s = sin(theta);
  uint i0, i1;
  if (traditional) { i0 = 2 * pair; i1 = 2 * pair + 1; }
  else { i0 = pair; i1 = pair + dims / 2; }
  size_t r = size_t(row) * dims;
  float x0 = float(in[r + i0]), x1 = float(in[r + i1]);
  out[r + i0] = T(x0 * c - x1 * s);
  out[r + i1] = T(x0 * s + x1 * c);
}
template [[host_name("rope_float")]] [[kernel]] decltype(rope<float>) rope<float>;
template [[host_name("rope_half")]] [[kernel]] decltype(rope<half>) rope<half>;
