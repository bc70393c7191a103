// EXPECT-EXIT: 1
// EXPECT-MSG: error: use of undeclared identifier 'undeclared_thing'
// EXPECT-LOC: 7:86
// The error is on the kernel's signature line, to the right of [[buffer(0)]] and [[thread_position_in_grid]].
#include <metal_stdlib>
using namespace metal;
kernel void f(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) { undeclared_thing = 1; }
