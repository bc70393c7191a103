// MODE: asm
// Rule: a function constant becomes an OpSpecConstant with SpecId = its index; is_function_constant_defined(x)
// becomes a bool OpSpecConstantFalse with SpecId 65536 + index; a [[function_constant(b)]] guarded buffer is only
// read under the condition.
#include <metal_stdlib>
using namespace metal;
constant bool has_bias [[function_constant(3)]];
constant int n_iter [[function_constant(7)]];
constant float alpha [[function_constant(9)]];
kernel void function_constants(device float* o [[buffer(0)]], device const float* bias [[buffer(1), function_constant(has_bias)]],
                               uint i [[thread_position_in_grid]]) {
  float v = o[i] * alpha;
  if (has_bias) v += bias[i];
  if (is_function_constant_defined(n_iter)) v += float(n_iter);
  o[i] = v;
}
// CHECK-DAG: OpDecorate %[[ALPHA:[0-9]+]] SpecId 9
// CHECK-DAG: OpDecorate %[[BIAS:[0-9]+]] SpecId 3
// CHECK-DAG: OpDecorate %[[NDEF:[0-9]+]] SpecId 65543
// CHECK-DAG: OpDecorate %[[N:[0-9]+]] SpecId 7
// CHECK-DAG: %[[ALPHA]] = OpSpecConstant %float 0
// CHECK-DAG: %[[BIAS]] = OpSpecConstant{{(False %bool| %uchar 0)}}
// CHECK-DAG: %[[NDEF]] = OpSpecConstantFalse %bool
// CHECK-DAG: %[[N]] = OpSpecConstant %uint 0
// CHECK-LABEL: %main = OpFunction
// CHECK: OpFMul %float %{{[0-9]+}} %[[ALPHA]]
// CHECK: OpSelectionMerge
// CHECK: OpBranchConditional %{{[0-9]+}} %[[THEN:[0-9]+]]
// CHECK: %[[THEN]] = OpLabel
// CHECK: OpAccessChain %_ptr_PushConstant_ulong %args %uint_2
// CHECK: OpSelectionMerge
// CHECK-NEXT: OpBranchConditional %[[NDEF]]
// CHECK: OpConvertSToF %float %[[N]]
