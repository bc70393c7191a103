// ENTRIES: k
#include <metal_stdlib>
using namespace metal;
kernel void k(device const packed_float3* pos [[buffer(0)]], device packed_float3* outp [[buffer(1)]], device float* o [[buffer(2)]], uint gid [[thread_position_in_grid]]) {
  packed_float3 t = pos[gid];
  float3 p = t;
  o[gid] = pos[gid].x + pos[gid][1];
  packed_float3 q = p;
  outp[gid] = q;
}
