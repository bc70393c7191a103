// ENTRIES: unary_exp_float unary_exp_half unary_exp_bfloat unary_neg_float unary_neg_int binary_add_float4
// Templated kernels instantiated several times with [[host_name]] (explicit instantiation and MLX's decltype form).
#include <metal_stdlib>
using namespace metal;

struct Exp { template <typename T> T operator()(T x) { return T(metal::exp(float(x))); } };
struct Neg { template <typename T> T operator()(T x) { return -x; } };

template <typename T, typename Op>
[[kernel]] void unary(device const T* in [[buffer(0)]], device T* out [[buffer(1)]],
                      uint gid [[thread_position_in_grid]]) {
  out[gid] = Op()(in[gid]);
}

template <typename T>
kernel void binary_add(device const T* a [[buffer(0)]], device const T* b [[buffer(1)]], device T* c [[buffer(2)]],
                       uint gid [[thread_position_in_grid]]) {
  c[gid] = a[gid] + b[gid];
}

template [[host_name("unary_exp_float")]] [[kernel]] decltype(unary<float, Exp>) unary<float, Exp>;
template [[host_name("unary_exp_half")]] [[kernel]] decltype(unary<half, Exp>) unary<half, Exp>;
template [[host_name("unary_exp_bfloat")]] [[kernel]] decltype(unary<bfloat, Exp>) unary<bfloat, Exp>;
template [[host_name("unary_neg_float")]] [[kernel]] decltype(unary<float, Neg>) unary<float, Neg>;
template [[host_name("unary_neg_int")]] [[kernel]] decltype(unary<int, Neg>) unary<int, Neg>;
template [[host_name("binary_add_float4")]] kernel void binary_add<float4>(device const float4*, device const float4*,
                                                                         device float4*, uint);
