// MODE: asm
// Rule (stdlib metal_math, p16_exp_range_): a precise exp of a half is Exp in float, and its range handling (inf at
// or above 12, 0 at or below -18, a NaN kept) depends on the argument alone: the value outside the range and the
// range test are computed beside Exp, and one select chooses after it, before the narrowing (three selects in turn
// after the narrowing made each element's chain longer). Bfloat keeps its selects in turn (BFloatWords selects among
// rounded words there).
#include <metal_stdlib>
using namespace metal;
kernel void exp_half(device const half* x [[buffer(0)]], device half* o [[buffer(1)]], uint i [[thread_position_in_grid]]) {
  o[i] = precise::exp(x[i]);
}
// CHECK-LABEL: %main = OpFunction
// CHECK: %[[X:[0-9]+]] = OpFConvert %float %{{[0-9]+}}
// CHECK-NEXT: %[[E:[0-9]+]] = OpExtInst %float %{{[0-9]+}} Exp %[[X]]
// CHECK: %[[Z:[0-9]+]] = OpSelect %float %{{[0-9]+}} %float_0 %[[X]]
// CHECK-NEXT: %[[OUT:[0-9]+]] = OpSelect %float %{{[0-9]+}} %float_0x1p_128 %[[Z]]
// CHECK: %[[R:[0-9]+]] = OpSelect %float %{{[0-9]+}} %[[OUT]] %[[E]]
// CHECK-NEXT: %[[H:[0-9]+]] = OpFConvert %half %[[R]]
// CHECK-NOT: OpSelect %half
// CHECK: OpStore %{{[0-9]+}} %[[H]]
// CHECK: OpFunctionEnd
