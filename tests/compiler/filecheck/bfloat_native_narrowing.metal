// MODE: asm
// ARGS: --asm-variants --native-bfloat16
// Rule (spirv/Emitter.cpp Emitter::floatToBfloat, compiler/Compiler.cpp): the portable build narrows float to bfloat
// in integer arithmetic (round to nearest even: add 0x7fff plus the kept lsb; NaNs get the quiet bit) and declares
// nothing of SPV_KHR_bfloat16. With --native-bfloat16 a kernel that narrows also gets a native-bfloat16 build: the same module with each
// narrowing one OpFConvert to the bfloat16 type (scalar and vector) and a bitcast to the 16-bit integers bfloat is
// stored as, under capability BFloat16TypeKHR alone (not the cooperative-matrix one). Widening stays a shift.
#include <metal_stdlib>
using namespace metal;
kernel void scale_bf(device const bfloat* in [[buffer(0)]], device const float4* in4 [[buffer(1)]],
                     device bfloat* out [[buffer(2)]], device bfloat4* out4 [[buffer(3)]],
                     uint i [[thread_position_in_grid]]) {
  out[i] = bfloat(float(in[i]) * 3.0f);
  out4[i] = bfloat4(in4[i] * 3.0f);
}
// CHECK-NOT: BFloat16
// CHECK-LABEL: %main = OpFunction
// CHECK: OpShiftLeftLogical %uint %{{[0-9]+}} %uint_16
// CHECK: OpIAdd %uint %{{[0-9]+}} %uint_32767
// CHECK: OpIsNan %bool
// CHECK: OpBitwiseOr %uint %{{[0-9]+}} %uint_4194304
// CHECK: OpIAdd %v4uint
// CHECK: OpIsNan %v4bool
// CHECK-NOT: OpFConvert
// CHECK: OpFunctionEnd

// CHECK-LABEL: ; native-bfloat16 build
// CHECK-NOT: BFloat16CooperativeMatrixKHR
// CHECK: OpCapability BFloat16TypeKHR
// CHECK-NOT: BFloat16CooperativeMatrixKHR
// CHECK: OpExtension "SPV_KHR_bfloat16"
// CHECK-DAG: %bfloat16 = OpTypeFloat 16 BFloat16KHR
// CHECK-DAG: %v4bfloat16 = OpTypeVector %bfloat16 4
// CHECK-LABEL: %main = OpFunction
// CHECK-NOT: OpIsNan
// CHECK: OpShiftLeftLogical %uint %{{[0-9]+}} %uint_16
// CHECK-NOT: OpIsNan
// CHECK: %[[S:[0-9]+]] = OpFConvert %bfloat16 %{{[0-9]+}}
// CHECK-NEXT: OpBitcast %ushort %[[S]]
// CHECK-NOT: OpIsNan
// CHECK: %[[V:[0-9]+]] = OpFConvert %v4bfloat16 %{{[0-9]+}}
// CHECK-NEXT: OpBitcast %v4ushort %[[V]]
// CHECK-NOT: OpIsNan
// CHECK: OpFunctionEnd
