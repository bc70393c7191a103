// MODE: json
// Rule: the reflection lists buffer parameters with their push-constant offsets (16 + 8*i, i = position among the
// buffer parameters in declaration order) and the block size.
#include <metal_stdlib>
using namespace metal;
kernel void buffer_args_json(device const float4* a [[buffer(0)]], device float4* b [[buffer(3)]],
                             constant float& s [[buffer(1)]], uint gid [[thread_position_in_grid]]) {
  b[gid] = a[gid] * s;
}
// CHECK: "entry": "buffer_args_json"
// CHECK: "address_space": "device"
// CHECK-NEXT: "index": 0
// CHECK-NEXT: "kind": "buffer"
// CHECK-NEXT: "name": "a"
// CHECK: "address_space": "device"
// CHECK-NEXT: "index": 3
// CHECK-NEXT: "kind": "buffer"
// CHECK-NEXT: "name": "b"
// CHECK: "address_space": "constant"
// CHECK-NEXT: "index": 1
// CHECK-NEXT: "kind": "buffer"
// CHECK-NEXT: "name": "s"
// CHECK: "push_constants":
// CHECK-NEXT: "args":
// CHECK: "buffer": 0
// CHECK-NEXT: "offset": 16
// CHECK: "buffer": 3
// CHECK-NEXT: "offset": 24
// CHECK: "buffer": 1
// CHECK-NEXT: "offset": 32
// CHECK: "argument_buffer": false
// CHECK: "grid_offset": 0
// CHECK: "size": 40
// CHECK: "required_subgroup_size": 0
// CHECK: "spirv_entry": "main"
