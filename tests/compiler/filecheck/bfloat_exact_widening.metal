// MODE: asm
// Rule (lower/BFloatWords.cpp, step 3): a bfloat widened to float is widened where it came from. A narrowing of float
// is rounded once, as a word with the bfloat in its high half: its widening is that word with the low half cleared,
// and it is never converted to 16 bits and back; abs, select and arithmetic of bfloats run on the widened floats
// (abs of a bfloat is exact: no rounding after it). Here MLX's Sigmoid<bfloat>: exp(|x|), 1 / (1 + e) and 1 - y are
// each rounded once; the lanes stored as one word (step 4).
#include <metal_stdlib>
using namespace metal;
kernel void sigmoid_bf(device const bfloat2* in [[buffer(0)]], device bfloat2* out [[buffer(1)]],
                       uint i [[thread_position_in_grid]]) {
  bfloat2 x = in[i];
  bfloat2 y;
  for (int k = 0; k < 2; ++k) {
    bfloat s = 1 / (1 + exp(abs(x[k])));
    y[k] = x[k] < 0 ? s : 1 - s;
  }
  out[i] = y;
}
// CHECK-LABEL: %main = OpFunction
// CHECK-NOT: OpUConvert %ushort
// CHECK: %[[X:[0-9]+]] = OpLoad %uint %{{[0-9]+}} Aligned 4
// CHECK-NEXT: %[[X0:[0-9]+]] = OpShiftLeftLogical %uint %[[X]] %uint_16
// CHECK-NEXT: %[[XF:[0-9]+]] = OpBitcast %float %[[X0]]
// CHECK-NEXT: %[[A:[0-9]+]] = OpExtInst %float %{{[0-9]+}} FAbs %[[XF]]
// CHECK-NEXT: %[[LO:[0-9]+]] = OpExtInst %float %{{[0-9]+}} NMax %[[A]] %float_n104
// CHECK-NEXT: %[[HI:[0-9]+]] = OpExtInst %float %{{[0-9]+}} NMin %[[LO]] %float_88_7219
// CHECK-NEXT: OpExtInst %float %{{[0-9]+}} Exp %[[HI]]
// CHECK: %[[EM:[0-9]+]] = OpBitwiseAnd %uint %{{[0-9]+}} %uint_4294901760
// CHECK-NEXT: %[[E:[0-9]+]] = OpBitcast %float %[[EM]]
// CHECK-NEXT: %[[EN:[0-9]+]] = OpSelect %float %{{[0-9]+}} %[[A]] %[[E]]
// CHECK-NEXT: %[[S:[0-9]+]] = OpFAdd %float %[[EN]] %float_1
// CHECK-NEXT: OpFDiv %float %float_1 %[[S]]
// CHECK: %[[YW:[0-9]+]] = OpSelect %uint
// CHECK: %[[YM:[0-9]+]] = OpBitwiseAnd %uint %[[YW]] %uint_4294901760
// CHECK-NEXT: %[[Y:[0-9]+]] = OpBitcast %float %[[YM]]
// CHECK-NEXT: OpFSub %float %float_1 %[[Y]]
// CHECK-NOT: OpUConvert %ushort
// CHECK: OpStore %{{[0-9]+}} %{{[0-9]+}} Aligned 4
// CHECK-NOT: OpUConvert %ushort
// CHECK: OpFunctionEnd
