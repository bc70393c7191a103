// MODE: asm
// Rule (spirv/Emitter.cpp, roundedBfloatWord): narrowing a float to bfloat adds to its bits, which could carry a NaN
// into inf, so the rounding keeps a NaN by a select; when LLVM's floating-point class analysis proves the float is
// never a NaN (here fmax with a number returns the number for a NaN), the rounding is the integer sequence alone.
#include <metal_stdlib>
using namespace metal;
kernel void narrow(device const float* x [[buffer(0)]], device bfloat* o [[buffer(1)]],
                   device bfloat* p [[buffer(2)]], uint i [[thread_position_in_grid]]) {
  o[i] = bfloat(fmax(x[i], 0.0f));
  p[i] = bfloat(x[i]);
}
// CHECK-LABEL: %main = OpFunction
// CHECK: %[[X:[0-9]+]] = OpLoad %float
// CHECK: %[[M:[0-9]+]] = OpExtInst %float %{{[0-9]+}} NMax %[[X]] %float_0
// CHECK-NEXT: %[[BITS:[0-9]+]] = OpBitcast %uint %[[M]]
// CHECK-NEXT: %[[S:[0-9]+]] = OpShiftRightLogical %uint %[[BITS]] %uint_16
// CHECK-NEXT: %[[LSB:[0-9]+]] = OpBitwiseAnd %uint %[[S]] %uint_1
// CHECK-NEXT: %[[BIAS:[0-9]+]] = OpIAdd %uint %[[LSB]] %uint_32767
// CHECK-NEXT: %[[W:[0-9]+]] = OpIAdd %uint %[[BITS]] %[[BIAS]]
// CHECK-NEXT: OpShiftRightLogical %uint %[[W]] %uint_16
// the float that may be a NaN keeps its test
// CHECK: %[[XB:[0-9]+]] = OpBitcast %uint %[[X]]
// CHECK: OpIsNan %bool %[[X]]
// CHECK: OpFunctionEnd
