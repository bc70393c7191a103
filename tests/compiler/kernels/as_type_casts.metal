// ENTRIES: as_type_casts
// as_type bit reinterpretation and static_cast / convert between vector types.
#include <metal_stdlib>
using namespace metal;

kernel void as_type_casts(device const float4* in [[buffer(0)]], device uint4* bits [[buffer(1)]],
                          device half4* halves [[buffer(2)]], device int4* ints [[buffer(3)]],
                          device float* f [[buffer(4)]], device ushort2* packed [[buffer(5)]],
                          uint gid [[thread_position_in_grid]]) {
  float4 v = in[gid];
  uint4 b = as_type<uint4>(v);
  bits[gid] = b ^ 0x80000000u;
  half4 h = static_cast<half4>(v);
  halves[gid] = h;
  int4 i = static_cast<int4>(v * 10.0f);
  ints[gid] = i;
  float back = as_type<float>(b.x & 0x7fffffffu);
  half2 hh = half2(v.xy);
  ushort2 us = as_type<ushort2>(hh);
  packed[gid] = us;
  uint u = as_type<uint>(hh);
  f[gid] = back + float(as_type<half2>(u).y) + float(static_cast<float2>(us).x);
}
