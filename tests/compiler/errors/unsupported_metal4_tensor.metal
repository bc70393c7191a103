// EXPECT-EXIT: 3
// EXPECT-MSG: error: unsupported: Metal 4 tensors (<metal_tensor>)
// EXPECT-LOC: 6:10
// Metal 4's tensor header is named, at the user's #include, as not supported (exit 3), with nothing after it.
#include <metal_stdlib>
#include <metal_tensor>
kernel void f(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) { out[i] = 1.0f; }
