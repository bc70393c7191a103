// EXPECT-EXIT: 3
// EXPECT-MSG: recursion is not supported
// EXPECT-LOC: 8:94
// Recursion: unsupported (exit 3); the location is the call in the kernel that could not be inlined.
#include <metal_stdlib>
using namespace metal;
uint fib(uint n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
kernel void f(device uint* out [[buffer(0)]], uint i [[thread_position_in_grid]]) { out[i] = fib(out[i]); }
