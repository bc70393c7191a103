// ENTRIES: control_loops
// Loops with break and continue, nested loops, do/while, a loop whose exit depends on data.
#include <metal_stdlib>
using namespace metal;

kernel void control_loops(device const float* in [[buffer(0)]], device float* out [[buffer(1)]],
                          constant int& n [[buffer(2)]], uint gid [[thread_position_in_grid]]) {
  float acc = 0.0f;
  for (int i = 0; i < n; ++i) {
    float v = in[(gid + i) % n];
    if (v < 0.0f) continue;
    if (v > 100.0f) break;
    acc += v;
  }
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 4; ++j) {
      if (j > i) break;
      if ((i + j) & 1) continue;
      acc += float(i * j);
    }
  }
  int k = 0;
  do {
    acc *= 0.5f;
    ++k;
  } while (acc > 1.0f && k < 32);
  uint w = gid;
  while (true) {
    if (w == 1) break;
    w = (w & 1) ? 3 * w + 1 : w / 2;
    if (w > 1000000) break;
  }
  out[gid] = acc + float(k) + float(w);
}
