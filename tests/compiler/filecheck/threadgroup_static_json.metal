// MODE: json
// Rule: the reflection reports the static threadgroup memory in bytes (64 floats + 32 halves = 320).
#include <metal_stdlib>
using namespace metal;
kernel void threadgroup_static_json(device float* o [[buffer(0)]], uint lid [[thread_index_in_threadgroup]]) {
  threadgroup float a[64];
  threadgroup half b[32];
  a[lid] = o[lid];
  b[lid & 31] = half(o[lid]);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  o[lid] = a[63 - lid] + float(b[lid & 31]);
}
// CHECK: "threadgroup_memory": {
// CHECK-NEXT: "dynamic": [],
// CHECK-NEXT: "static_bytes": 320
