// ENTRIES: barriers
// threadgroup_barrier with every mem_flags combination, simdgroup_barrier, atomic_thread_fence.
#include <metal_stdlib>
using namespace metal;

kernel void barriers(device float* data [[buffer(0)]], uint lid [[thread_index_in_threadgroup]],
                     uint gid [[thread_position_in_grid]], uint n [[threads_per_threadgroup]]) {
  threadgroup float tile[256];
  tile[lid] = data[gid];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  float a = tile[(lid + 1) % n];
  threadgroup_barrier(mem_flags::mem_none);
  data[gid] = a;
  threadgroup_barrier(mem_flags::mem_device);
  float b = data[gid ^ 1];
  threadgroup_barrier(mem_flags::mem_device | mem_flags::mem_threadgroup);
  simdgroup_barrier(mem_flags::mem_threadgroup);
  simdgroup_barrier(mem_flags::mem_none);
  atomic_thread_fence(mem_flags::mem_device, memory_order_seq_cst);
  tile[lid] = b + a;
  threadgroup_barrier(mem_flags::mem_threadgroup | mem_flags::mem_texture);
  data[gid] = tile[n - 1 - lid];
}
