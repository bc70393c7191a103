// EXPECT-EXIT: 1
// EXPECT-MSG: function constant index 65536 of 'c' is out of range: Metal allows [[function_constant(0)]] to [[function_constant(65535)]]
// Function constant indices are 16-bit in Metal; 65536 would collide with the "is defined" specialization ids.
#include <metal_stdlib>
using namespace metal;
constant int c [[function_constant(65536)]];
kernel void f(device int* out [[buffer(0)]], uint i [[thread_position_in_grid]]) { out[i] = c; }
