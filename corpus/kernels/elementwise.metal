// Elementwise kernels in the MLX style: functor ops, contiguous "v" kernels and strided "g" kernels that map a
// linear index to memory offsets through shape/stride arrays (elem_to_loc), instantiated with [[host_name]].
#include <metal_stdlib>
using namespace metal;

struct Exp { template <typename T> T operator()(T x) { return static_cast<T>(metal::exp(static_cast<float>(x))); } };
struct Sigmoid {
  template <typename T> T operator()(T x) {
    float y = 1.0f / (1.0f + metal::exp(-static_cast<float>(x)));
    return static_cast<T>(y);
  }
};
struct Neg { template <typename T> T operator()(T x) { return -x; } };
struct Add { template <typename T> T operator()(T a, T b) { return a + b; } };
struct Mul { template <typename T> T operator()(T a, T b) { return a * b; } };
struct Maximum { template <typename T> T operator()(T a, T b) { return a > b ? a : b; } };

template <typename IdxT = int64_t>
IdxT elem_to_loc(uint elem, constant const int* shape, constant const int64_t* strides, int ndim) {
  IdxT loc = 0;
  for (int i = ndim - 1; i >= 0 && elem > 0; --i) {
    loc += static_cast<IdxT>(elem % shape[i]) * strides[i];
    elem /= shape[i];
  }
  return loc;
}

template <typename T, typename Op>
[[kernel]] void unary_v(device const T* in [[buffer(0)]], device T* out [[buffer(1)]],
                        constant uint& size [[buffer(2)]], uint index [[thread_position_in_grid]]) {
  if (index < size) out[index] = Op()(in[index]);
}

template <typename T, typename Op>
[[kernel]] void binary_g(device const T* a [[buffer(0)]], device const T* b [[buffer(1)]], device T* c [[buffer(2)]],
                         constant const int* shape [[buffer(3)]], constant const int64_t* a_strides [[buffer(4)]],
                         constant const int64_t* b_strides [[buffer(5)]], constant const int& ndim [[buffer(6)]],
                         uint3 index [[thread_position_in_grid]], uint3 grid_dim [[threads_per_grid]]) {
  uint elem = index.x + grid_dim.x * (index.y + grid_dim.y * index.z);
  auto a_idx = elem_to_loc(elem, shape, a_strides, ndim);
  auto b_idx = elem_to_loc(elem, shape, b_strides, ndim);
  c[elem] = Op()(a[a_idx], b[b_idx]);
}

template <typename T>
[[kernel]] void where_g(device const bool* cond [[buffer(0)]], device const T* a [[buffer(1)]],
                        device const T* b [[buffer(2)]], device T* out [[buffer(3)]],
                        constant const int* shape [[buffer(4)]], constant const int64_t* strides [[buffer(5)]],
                        constant const int& ndim [[buffer(6)]], uint index [[thread_position_in_grid]]) {
  // strides holds three rows of ndim strides: cond, a, b
  auto ci = elem_to_loc(index, shape, strides, ndim);
  auto ai = elem_to_loc(index, shape, strides + ndim, ndim);
  auto bi = elem_to_loc(index, shape, strides + 2 * ndim, ndim);
  out[index] = cond[ci] ? a[ai] : b[bi];
}

#define instantiate_unary(name, op, tname, type) \
  template [[host_name(#name "_" #tname)]] [[kernel]] decltype(unary_v<type, op>) unary_v<type, op>;
#define instantiate_binary(name, op, tname, type) \
  template [[host_name(#name "_" #tname)]] [[kernel]] decltype(binary_g<type, op>) binary_g<type, op>;
#define instantiate_all(macro, name, op) \
  macro(name, op, float, float) macro(name, op, half, half) macro(name, op, bfloat, bfloat)

instantiate_all(instantiate_unary, exp, Exp)
instantiate_all(instantiate_unary, sigmoid, Sigmoid)
instantiate_unary(neg, Neg, int, int)
instantiate_all(instantiate_binary, add_g, Add)
instantiate_binary(mul_g, Mul, float, float)
instantiate_binary(max_g, Maximum, int, int)
template [[host_name("where_g_float")]] [[kernel]] decltype(where_g<float>) where_g<float>;
template [[host_name("where_g_half")]] [[kernel]] decltype(where_g<half>) where_g<half>;
