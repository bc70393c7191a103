// ENTRIES: pointer_casts
// Reinterpreting casts between element types (float* as float4*, uchar* as uint*, half* as uint*), pointer arithmetic
// on inputs and outputs, pointers into threadgroup memory with offsets.
#include <metal_stdlib>
using namespace metal;

kernel void pointer_casts(device const float* in [[buffer(0)]], device float* out [[buffer(1)]],
                          device const uchar* bytes [[buffer(2)]], device half* hout [[buffer(3)]],
                          constant uint& row_stride [[buffer(4)]],
                          uint gid [[thread_position_in_grid]], uint lid [[thread_index_in_threadgroup]]) {
  device const float4* in4 = (device const float4*)(in + gid * row_stride);
  float4 v = in4[0] + in4[1];
  device float* o = out + gid * 4;
  *o++ = v.x;
  *o++ = v.y;
  o[0] = v.z;
  o[1] = v.w;
  uint word = ((device const uint*)bytes)[gid];
  device const ushort* shorts = reinterpret_cast<device const ushort*>(bytes + 4 * gid);
  device uint* hw = (device uint*)(hout) + gid;
  *hw = as_type<uint>(half2(float(word & 0xff), float(shorts[1])));
  threadgroup float tg[64];
  threadgroup float* p = tg + (lid & 31);
  p[0] = v.x;
  p[32] = v.y;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  device float* tail = out + 4 * 1024 - 1 - gid;
  *tail = tg[(lid + 1) & 63];
}
