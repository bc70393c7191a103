// Bandwidth kernel for m2v_stream_bench: dst = src * s over float4, 2D grid (x * y threads, one float4 each).
#include <metal_stdlib>
using namespace metal;

kernel void copy_scale_f4(device const float4* src [[buffer(0)]], device float4* dst [[buffer(1)]],
                          constant float& s [[buffer(2)]], uint2 gid [[thread_position_in_grid]],
                          uint2 grid [[threads_per_grid]]) {
  const ulong i = ulong(gid.y) * grid.x + gid.x;
  dst[i] = src[i] * s;
}
