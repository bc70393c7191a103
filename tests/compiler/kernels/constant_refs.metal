// ENTRIES: constant_refs
// `constant T&` parameters of scalar, vector and array types; `constant T*` and `device const T&` parameters.
#include <metal_stdlib>
using namespace metal;

kernel void constant_refs(device float* out [[buffer(0)]], constant float& alpha [[buffer(1)]],
                          constant int3& shape [[buffer(2)]], constant float4* coefs [[buffer(3)]],
                          device const uint& count [[buffer(4)]], constant bool& flip [[buffer(5)]],
                          constant ulong& big [[buffer(6)]], constant half2& hs [[buffer(7)]],
                          uint gid [[thread_position_in_grid]]) {
  if (gid >= count) return;
  int x = int(gid) % shape.x, y = (int(gid) / shape.x) % shape.y;
  float v = alpha * float(x + y * shape.z) + coefs[gid & 1].y + float(big >> 32) + float(hs.x);
  out[gid] = flip ? -v : v;
}
