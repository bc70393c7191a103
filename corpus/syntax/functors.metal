// Operations written as function objects whose templated call operator names a math function (the style of
// elementwise kernel libraries), instantiated for bfloat and half: `round(x)` there reaches the compiler's builtin.
#include <metal_stdlib>
using namespace metal;

struct op_round {
  template <typename T> METAL_FUNC T operator()(T x) { return static_cast<T>(round(x)); }
};
struct op_floor_plus_one {
  template <typename T> METAL_FUNC T operator()(T x) { return static_cast<T>(floor(x) + T(1)); }
};

template <typename T, typename Op>
kernel void unary_op(device const T* x [[buffer(0)]], device T* y [[buffer(1)]], uint i [[thread_position_in_grid]]) {
  y[i] = Op()(x[i]);
}
template [[host_name("round_bf16")]] kernel void unary_op<bfloat, op_round>(device const bfloat*, device bfloat*, uint);
template [[host_name("round_f16")]] kernel void unary_op<half, op_round>(device const half*, device half*, uint);
template [[host_name("floor1_bf16")]] kernel void unary_op<bfloat, op_floor_plus_one>(device const bfloat*,
                                                                                       device bfloat*, uint);
