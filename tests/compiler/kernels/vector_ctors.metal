// ENTRIES: vector_ctors
// Metal vector constructors: splat, concatenation, conversion, vec<T,N>.
#include <metal_stdlib>
using namespace metal;

kernel void vector_ctors(device const float* in [[buffer(0)]], device float4* out [[buffer(1)]],
                         device int4* iout [[buffer(2)]], uint gid [[thread_position_in_grid]]) {
  float a = in[gid];
  float2 p = float2(a, a + 1.0f);
  float3 q = float3(p, 2.0f);
  float4 r = float4(q, 3.0f);
  float4 s = float4(p, p);
  float4 t = float4(a);
  float4 u = float4(1.0f, p, 4.0f);
  vec<float, 4> v = vec<float, 4>(0.5f);
  int4 w = int4(r);
  uint2 z = uint2(3u, 4u);
  half4 hv = half4(r);
  out[gid] = r + s + t + u + v + float4(hv) + float4(float2(z), 0.0f, 0.0f);
  iout[gid] = w + int4(int2(1), int2(z));
}
