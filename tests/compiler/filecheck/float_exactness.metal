// MODE: asm
// Rule: without fast math, float arithmetic is exactly as written: every OpFAdd/OpFSub/OpFMul/OpFDiv carries
// NoContraction (a driver may otherwise fuse or fold `(x + K) - K` to x), a multiply-add written as one expression
// is an Fma (LLVM writes x - K as x + -K, also exact); and signed division operates on signed-typed values, the
// remainder being a - (a / b) * b (NVIDIA's OpSRem is wrong for negative divisors).
#include <metal_stdlib>
using namespace metal;
kernel void exact(device float* x [[buffer(0)]], device int* n [[buffer(1)]], uint i [[thread_position_in_grid]]) {
  float j = x[i] + 12582912.0f;
  x[i] = (j - 12582912.0f) * x[i + 1] / x[i + 2] + x[i + 3] * x[i + 4];
  n[i] = n[i] % n[i + 1] + n[i + 2] / n[i + 3];
}
// CHECK-DAG: OpDecorate %[[ADD:[0-9]+]] NoContraction
// CHECK-DAG: OpDecorate %[[SUB:[0-9]+]] NoContraction
// CHECK-DAG: OpDecorate %[[MUL:[0-9]+]] NoContraction
// CHECK-DAG: OpDecorate %[[DIV:[0-9]+]] NoContraction
// CHECK-DAG: %[[INT:[_a-z0-9]+]] = OpTypeInt 32 1
// CHECK-LABEL: %main = OpFunction
// CHECK-DAG: %[[ADD]] = OpFAdd %float
// CHECK-DAG: %[[SUB]] = OpFAdd %float %[[ADD]] %float_n12582912
// CHECK-DAG: %[[MUL]] = OpFMul %float
// CHECK-DAG: %[[DIV]] = OpFDiv %float
// CHECK-DAG: OpExtInst %float %{{[0-9]+}} Fma
// CHECK-NOT: OpSRem
// CHECK-DAG: %[[Q:[0-9]+]] = OpSDiv %[[INT]] %[[A:[0-9]+]] %[[B:[0-9]+]]
// CHECK-DAG: %[[QB:[0-9]+]] = OpIMul %[[INT]] %[[Q]] %[[B]]
// CHECK-DAG: OpISub %[[INT]] %[[A]] %[[QB]]
// CHECK-DAG: OpSDiv %[[INT]]
