// C-style casts, which in Metal convert vectors element-wise and half <-> bfloat by value (a C++ cast would
// reinterpret the bits or be rejected), to a vector type, a template parameter, a typedef; a cast of a cast.
#include <metal_stdlib>
using namespace metal;

typedef float4 acc4_t;

// y = 2 x, element-wise through float4, back to the output's vector type
template <typename in4_t, typename out4_t>
kernel void cast4(device const in4_t* x [[buffer(0)]], device out4_t* y [[buffer(1)]],
                  uint i [[thread_position_in_grid]]) {
  acc4_t v = (acc4_t) x[i];
  float4 w = (float4)(v * 2.0f);
  y[i] = (out4_t) w;
}
template [[host_name("cast4_f16_f32")]] kernel void cast4<half4, float4>(device const half4*, device float4*, uint);
template [[host_name("cast4_f32_f16")]] kernel void cast4<float4, half4>(device const float4*, device half4*, uint);
template [[host_name("cast4_f16_bf16")]] kernel void cast4<half4, bfloat4>(device const half4*, device bfloat4*,
                                                                            uint);

// half -> bfloat by value (a C++ cast between the two is rejected), a cast of a cast
kernel void cast_half_bfloat(device const half* x [[buffer(0)]], device bfloat* y [[buffer(1)]],
                             uint i [[thread_position_in_grid]]) {
  y[i] = (bfloat)(half)(float) x[i];
}
