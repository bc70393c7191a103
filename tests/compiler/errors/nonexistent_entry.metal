// EXPECT-EXIT: 1
// EXPECT-MSG: no_such_kernel
// ARGS: compile %s --entry no_such_kernel -o /dev/null/unused
// --entry naming a kernel that is not in the file.
#include <metal_stdlib>
using namespace metal;
kernel void present(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) { out[i] = 1.0f; }
