// EXPECT-EXIT: 1
// EXPECT-MSG: buffer index 31 of 'b' is out of range: Metal allows [[buffer(0)]] to [[buffer(30)]]
// EXPECT-LOC: 8:29
// Metal has 31 buffer slots: [[buffer(31)]] is an error in the input (docs/ABI.md), never a module that reads past
// the argument table.
#include <metal_stdlib>
using namespace metal;
kernel void f(device float* b [[buffer(31)]], uint i [[thread_position_in_grid]]) { b[i] = 1.0f; }
