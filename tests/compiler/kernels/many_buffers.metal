// ENTRIES: many_buffers
// 16 buffer parameters (more than 14 fit into 128 bytes of push constants): the argument buffer spill.
#include <metal_stdlib>
using namespace metal;

kernel void many_buffers(device const float* b0 [[buffer(0)]], device const float* b1 [[buffer(1)]],
                         device const float* b2 [[buffer(2)]], device const float* b3 [[buffer(3)]],
                         device const float* b4 [[buffer(4)]], device const float* b5 [[buffer(5)]],
                         device const float* b6 [[buffer(6)]], device const float* b7 [[buffer(7)]],
                         device const float* b8 [[buffer(8)]], device const float* b9 [[buffer(9)]],
                         device const float* b10 [[buffer(10)]], device const float* b11 [[buffer(11)]],
                         device const float* b12 [[buffer(12)]], device const float* b13 [[buffer(13)]],
                         constant float& scale [[buffer(14)]], device float* out [[buffer(15)]],
                         uint gid [[thread_position_in_grid]]) {
  float s = b0[gid] + b1[gid] + b2[gid] + b3[gid] + b4[gid] + b5[gid] + b6[gid] + b7[gid];
  s += b8[gid] + b9[gid] + b10[gid] + b11[gid] + b12[gid] + b13[gid];
  out[gid] = s * scale;
}
