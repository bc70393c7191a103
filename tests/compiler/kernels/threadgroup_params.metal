// ENTRIES: threadgroup_params
// [[threadgroup(n)]] parameters whose sizes the host sets at dispatch time, next to a static threadgroup array.
#include <metal_stdlib>
using namespace metal;

kernel void threadgroup_params(device const float* in [[buffer(0)]], device float* out [[buffer(1)]],
                               threadgroup float* scratch [[threadgroup(0)]],
                               threadgroup uint* keys [[threadgroup(1)]],
                               uint gid [[thread_position_in_grid]], uint lid [[thread_index_in_threadgroup]],
                               uint n [[threads_per_threadgroup]]) {
  threadgroup float fixed[32];
  scratch[lid] = in[gid];
  keys[lid] = as_type<uint>(in[gid]);
  if (lid < 32) fixed[lid] = 0.0f;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (uint stride = n / 2; stride > 0; stride >>= 1) {
    if (lid < stride) scratch[lid] += scratch[lid + stride];
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  if (lid == 0) out[gid / n] = scratch[0] + fixed[0] + float(keys[n - 1] & 1);
}
