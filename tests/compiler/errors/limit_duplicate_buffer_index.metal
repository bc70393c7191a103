// EXPECT-EXIT: 1
// EXPECT-MSG: parameters 'a' and 'b' of kernel 'f' both use [[buffer(2)]]
// EXPECT-LOC: 8:29
// Two parameters on one buffer slot (without mutually exclusive function constants) are an error, as in Metal.
#include <metal_stdlib>
using namespace metal;
kernel void f(device float* a [[buffer(2)]],
              device float* b [[buffer(2)]], uint i [[thread_position_in_grid]]) { a[i] = b[i]; }
