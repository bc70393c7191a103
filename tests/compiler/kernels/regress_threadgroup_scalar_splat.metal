// ENTRIES: k
#include <metal_stdlib>
using namespace metal;
kernel void k(device float4* out [[buffer(0)]], uint lid [[thread_position_in_threadgroup]]) {
  threadgroup float part[32];
  part[lid] = float(lid);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  float scale = part[0];
  out[lid] = out[lid] * scale;
}
