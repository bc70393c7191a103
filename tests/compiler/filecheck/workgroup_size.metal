// MODE: json
// Rule: the workgroup size is not fixed in the module: reflection names the LocalSizeId spec constants
// 131072..131074 and the requested (nominal) threadgroup size spec constants 131075..131077.
#include <metal_stdlib>
using namespace metal;
kernel void workgroup_size(device float* o [[buffer(0)]], uint gid [[thread_position_in_grid]]) { o[gid] = 1.0f; }
// CHECK: "nominal_threadgroup_size_spec_ids": [
// CHECK-NEXT: 131075,
// CHECK-NEXT: 131076,
// CHECK-NEXT: 131077
// CHECK: "workgroup_size_spec_ids": [
// CHECK-NEXT: 131072,
// CHECK-NEXT: 131073,
// CHECK-NEXT: 131074
