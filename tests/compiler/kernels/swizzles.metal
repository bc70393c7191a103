// ENTRIES: swizzles
// Swizzle reads and writes, .rgba and .xyzw, on float/half/int vectors.
#include <metal_stdlib>
using namespace metal;

kernel void swizzles(device float4* data [[buffer(0)]], device half4* hdata [[buffer(1)]],
                     device int3* idata [[buffer(2)]], uint gid [[thread_position_in_grid]]) {
  float4 v = data[gid];
  float4 w = v.wzyx;
  w.xy = v.zw;
  w.z += v.x;
  float2 rg = v.rg;
  float3 bgr = v.bgr;
  data[gid] = w + float4(rg, bgr.xy) + v.xxxx;
  half4 h = hdata[gid];
  h.yw = h.xz * 2.0h;
  hdata[gid] = h.wzyx;
  int3 i = idata[gid];
  i.zx = i.xz;
  idata[gid] = i.yzx + int3(i.x);
}
