// ENTRIES: bfloat_arith
// bfloat scalar and vector arithmetic (computed via float with rounding), conversion both ways.
#include <metal_stdlib>
using namespace metal;

kernel void bfloat_arith(device const bfloat* a [[buffer(0)]], device const bfloat4* b [[buffer(1)]],
                         device bfloat* out [[buffer(2)]], device bfloat4* out4 [[buffer(3)]],
                         device float* f [[buffer(4)]], uint gid [[thread_position_in_grid]]) {
  bfloat x = a[gid];
  bfloat y = x * x + bfloat(0.5f);
  y = y / (x + bfloat(2.0f));
  out[gid] = y - x;
  bfloat4 v = b[gid];
  bfloat4 w = v * bfloat4(x) + v;
  out4[gid] = w;
  float sum = float(w.x) + float(w.y) + float(w.z) + float(w.w);
  f[gid] = sum + float(x > y ? x : y);
}
