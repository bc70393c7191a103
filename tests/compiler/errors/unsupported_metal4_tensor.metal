// EXPECT-EXIT: 3
// EXPECT-MSG: error: unsupported: Metal 4 tensors bound by the host (MTLTensor arguments)
// EXPECT-LOC: 9:87
// A Metal 4 tensor bound by the host (an MTLTensor argument: the default descriptor, tensor_handle) is named as not
// supported (exit 3), with nothing after it, where the kernel names it (not in the library header that refuses it).
#include <metal_stdlib>
#include <metal_tensor>
using namespace metal;
kernel void f(device float* out [[buffer(0)]], tensor<device float, dextents<int, 2>> t [[buffer(1)]]) { out[0] = 1.0f; }
