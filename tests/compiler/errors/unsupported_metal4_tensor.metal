// EXPECT-EXIT: 3
// EXPECT-MSG: error: unsupported: Metal 4 tensor views of memory (tensor, extents, dextents)
// EXPECT-LOC: 6:10
// A Metal 4 tensor view of memory is named as not supported (exit 3), with nothing after it. The location is the
// line that brought the library in (<metal_stdlib> carries <metal_tensor>, as Apple's does).
#include <metal_stdlib>
#include <metal_tensor>
using namespace metal;
kernel void f(device float* out [[buffer(0)]], tensor<device float, dextents<int, 2>> t [[buffer(1)]]) { out[0] = 1.0f; }
