// MODE: json
// Rule: the spill is reported in the reflection: argument_buffer true, args at offsets 0, 8, ... in that buffer,
// and a 24-byte push-constant block (grid + one address).
#include <metal_stdlib>
using namespace metal;
kernel void spill_json(device float* b0 [[buffer(0)]], device float* b1 [[buffer(1)]], device float* b2 [[buffer(2)]],
                       device float* b3 [[buffer(3)]], device float* b4 [[buffer(4)]], device float* b5 [[buffer(5)]],
                       device float* b6 [[buffer(6)]], device float* b7 [[buffer(7)]], device float* b8 [[buffer(8)]],
                       device float* b9 [[buffer(9)]], device float* b10 [[buffer(10)]], device float* b11 [[buffer(11)]],
                       device float* b12 [[buffer(12)]], device float* b13 [[buffer(13)]], device float* b14 [[buffer(14)]],
                       uint i [[thread_position_in_grid]]) {
  b14[i] = b0[i] + b1[i] + b2[i] + b3[i] + b4[i] + b5[i] + b6[i] + b7[i] + b8[i] + b9[i] + b10[i] + b11[i] + b12[i] + b13[i];
}
// CHECK: "push_constants":
// CHECK: "buffer": 0
// CHECK-NEXT: "offset": 0
// CHECK: "buffer": 1
// CHECK-NEXT: "offset": 8
// CHECK: "buffer": 14
// CHECK-NEXT: "offset": 112
// CHECK: "argument_buffer": true
