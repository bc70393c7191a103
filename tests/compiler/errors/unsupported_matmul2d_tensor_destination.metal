// EXPECT-EXIT: 3
// EXPECT-MSG: error: unsupported: matmul2d with a tensor destination
// EXPECT-LOC: 15:6
// matmul2d writing straight into a tensor over memory is named as not supported (exit 3) where the kernel calls it.
#include <metal_stdlib>
#include <MetalPerformancePrimitives/MetalPerformancePrimitives.h>
using namespace metal;
kernel void f(device half* a [[buffer(0)]], device float* d [[buffer(1)]]) {
  constexpr auto desc = mpp::tensor_ops::matmul2d_descriptor(16, 16, 16);
  mpp::tensor_ops::matmul2d<desc, execution_simdgroup> op;
  auto left = op.template get_left_input_cooperative_tensor<half, half, float>();
  auto right = op.template get_right_input_cooperative_tensor<half, half, float>();
  tensor<device float, extents<int, 16, 16>, tensor_inline> out(d, extents<int, 16, 16>{});
  (void)a;
  op.run(left, right, out);
}
