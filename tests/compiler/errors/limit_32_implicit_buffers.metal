// EXPECT-EXIT: 1
// EXPECT-MSG: kernel 'f' has more than 31 buffer arguments ('b31' would be [[buffer(31)]]
// Pointer parameters without an attribute take the next buffer index; the 32nd is past Metal's last slot.
#include <metal_stdlib>
using namespace metal;
kernel void f(device float* b0, device float* b1, device float* b2, device float* b3, device float* b4, device float* b5, device float* b6, device float* b7, device float* b8, device float* b9, device float* b10, device float* b11, device float* b12, device float* b13, device float* b14, device float* b15, device float* b16, device float* b17, device float* b18, device float* b19, device float* b20, device float* b21, device float* b22, device float* b23, device float* b24, device float* b25, device float* b26, device float* b27, device float* b28, device float* b29, device float* b30, device float* b31) { b0[0] = 1.0f; }
