// ENTRIES: math_vector
// math on float4/half4 vectors, geometric functions (dot, length, normalize, cross, distance).
#include <metal_stdlib>
using namespace metal;

kernel void math_vector(device const float4* a [[buffer(0)]], device const float4* b [[buffer(1)]],
                        device float4* out [[buffer(2)]], device half4* hout [[buffer(3)]],
                        uint gid [[thread_position_in_grid]]) {
  float4 x = a[gid], y = b[gid];
  float4 r = exp(x) + log(abs(y) + 1.0f) + clamp(x, 0.0f, 1.0f) + mix(x, y, 0.5f) + step(y, x);
  r += smoothstep(float4(0.0f), float4(1.0f), x) + fmax(x, y) + select(x, y, x > y) + rsqrt(abs(y) + 1.0f);
  float d = dot(x, y) + length(x) + distance(x, y);
  float3 c = cross(x.xyz, y.xyz);
  out[gid] = r + normalize(x + 1.0f) * d + float4(c, 0.0f);
  half4 hx = half4(x);
  hout[gid] = exp(hx) + fma(hx, half4(2.0h), half4(1.0h)) + sin(hx) + floor(hx) + rsqrt(abs(hx) + 1.0h);
}
