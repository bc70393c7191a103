// MODE: json
// Rule: the reflection lists each [[threadgroup(n)]] parameter with its spec id 131088 + n.
#include <metal_stdlib>
using namespace metal;
kernel void threadgroup_dynamic_json(device float* o [[buffer(0)]], threadgroup float* dyn [[threadgroup(3)]],
                                     uint lid [[thread_index_in_threadgroup]]) {
  dyn[lid] = o[lid];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  o[lid] = dyn[lid ^ 1];
}
// CHECK: "address_space": "threadgroup"
// CHECK-NEXT: "index": 3
// CHECK-NEXT: "kind": "threadgroup"
// CHECK-NEXT: "name": "dyn"
// CHECK: "threadgroup_memory": {
// CHECK-NEXT: "dynamic": [
// CHECK-NEXT: {
// CHECK-NEXT: "index": 3,
// CHECK-NEXT: "spec_id": 131091
