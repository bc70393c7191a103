// ENTRIES: k
#include <metal_stdlib>
using namespace metal;
kernel void k(device uint* out [[buffer(0)]], uint lid [[thread_index_in_threadgroup]]) {
  threadgroup atomic_uint h[4];
  atomic_fetch_add_explicit(&h[3], 1u, memory_order_relaxed);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  out[lid] = atomic_load_explicit(&h[lid & 3], memory_order_relaxed);
}
