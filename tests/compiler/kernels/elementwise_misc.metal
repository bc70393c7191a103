// ENTRIES: where_select arange_fill cast_f32_to_bf16 binary_broadcast
// Small elementwise kernels: ternary where, arange, dtype cast with rounding, broadcast binary op with row/col index.
#include <metal_stdlib>
using namespace metal;

kernel void where_select(device const bool* cond [[buffer(0)]], device const float* a [[buffer(1)]],
                         device const float* b [[buffer(2)]], device float* out [[buffer(3)]],
                         uint i [[thread_position_in_grid]]) {
  out[i] = cond[i] ? a[i] : b[i];
}

kernel void arange_fill(constant float& start [[buffer(0)]], constant float& step_ [[buffer(1)]],
                        device float* out [[buffer(2)]], uint i [[thread_position_in_grid]]) {
  out[i] = start + float(i) * step_;
}

kernel void cast_f32_to_bf16(device const float4* in [[buffer(0)]], device bfloat4* out [[buffer(1)]],
                             uint i [[thread_position_in_grid]]) {
  out[i] = bfloat4(in[i]);
}

kernel void binary_broadcast(device const float* a [[buffer(0)]], device const float* row_bias [[buffer(1)]],
                             device float* out [[buffer(2)]], constant uint2& shape [[buffer(3)]],
                             uint2 pos [[thread_position_in_grid]]) {
  if (pos.x >= shape.x || pos.y >= shape.y) return;  // any(bool2) is in regress_bool_vector_any.metal
  uint idx = pos.y * shape.x + pos.x;
  out[idx] = a[idx] * row_bias[pos.x] + select(0.0f, 1.0f, pos.x == 0 && pos.y == 0);
}
