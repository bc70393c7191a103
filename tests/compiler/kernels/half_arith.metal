// ENTRIES: half_arith
// half arithmetic, half math functions, half4 vectors, mixed half/float.
#include <metal_stdlib>
using namespace metal;

kernel void half_arith(device const half4* a [[buffer(0)]], device const half4* b [[buffer(1)]],
                       device half4* out [[buffer(2)]], device half* scalar [[buffer(3)]],
                       uint gid [[thread_position_in_grid]]) {
  half4 x = a[gid], y = b[gid];
  half4 z = x * y + x / (y + 1.0h) - half4(0.25h);
  z = fma(x, y, z);
  z = max(z, half4(0.0h));
  z += exp(-abs(x)) + sqrt(abs(y));
  half s = dot(float4(x), float4(y));
  out[gid] = clamp(z, -HALF_MAX, HALF_MAX);
  scalar[gid] = s * 0.5h + tanh(x.x) + half(float(y.w) * 3.0f);
}
