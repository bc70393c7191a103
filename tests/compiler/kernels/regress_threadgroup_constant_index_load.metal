// ENTRIES: k
#include <metal_stdlib>
using namespace metal;
kernel void k(device float* out [[buffer(0)]], uint lid [[thread_index_in_threadgroup]]) {
  threadgroup float m[4];
  if (lid < 4) m[lid] = float(lid);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  out[lid] = m[1];
}
