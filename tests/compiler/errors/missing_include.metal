// EXPECT-EXIT: 1
// EXPECT-MSG: 'does_not_exist.h' file not found
// EXPECT-LOC: 5:10
// A missing #include.
#include "does_not_exist.h"
#include <metal_stdlib>
kernel void f(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) { out[i] = 1.0f; }
