// EXPECT-EXIT: 3
// EXPECT-MSG: error: unsupported: Metal 4 tensor views of memory (tensor, extents, dextents)
// EXPECT-LOC: 9:69
// A Metal 4 tensor view of memory is named as not supported (exit 3), with nothing after it, where the kernel names
// it (not in the library header that refuses it).
#include <metal_stdlib>
#include <metal_tensor>
using namespace metal;
kernel void f(device float* out [[buffer(0)]], tensor<device float, dextents<int, 2>> t [[buffer(1)]]) { out[0] = 1.0f; }
