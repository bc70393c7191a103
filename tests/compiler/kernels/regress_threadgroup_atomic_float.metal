// ENTRIES: k
#include <metal_stdlib>
using namespace metal;
kernel void k(device float* out [[buffer(0)]], uint lid [[thread_index_in_threadgroup]]) {
  threadgroup atomic_float acc;
  atomic_fetch_add_explicit(&acc, 1.0f, memory_order_relaxed);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  out[lid] = atomic_load_explicit(&acc, memory_order_relaxed);
}
