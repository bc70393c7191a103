// Kernels in the shape mx.fast.metal_kernel generates from a Python body: a templated wrapper with the inputs,
// their shape/strides/ndim arrays, the outputs and the requested built-ins, instantiated as custom_kernel_<name>_<T>.
#include <metal_stdlib>
using namespace metal;

template <typename IdxT = int64_t>
METAL_FUNC IdxT loc_of(uint elem, constant const int* shape, constant const int64_t* strides, int ndim) {
  IdxT loc = 0;
  for (int i = ndim - 1; i >= 0 && elem > 0; --i) {
    loc += static_cast<IdxT>(elem % shape[i]) * strides[i];
    elem /= shape[i];
  }
  return loc;
}

// body: out = exp(inp) with strided input (ensure_row_contiguous=False)
template <typename T>
[[kernel]] void custom_kernel_strided_exp(const device T* inp [[buffer(0)]],
                                          const constant int* inp_shape [[buffer(1)]],
                                          const constant int64_t* inp_strides [[buffer(2)]],
                                          const constant int& inp_ndim [[buffer(3)]], device T* out [[buffer(4)]],
                                          uint3 thread_position_in_grid [[thread_position_in_grid]]) {
  uint elem = thread_position_in_grid.x;
  int64_t loc = loc_of(elem, inp_shape, inp_strides, inp_ndim);
  T tmp = inp[loc];
  out[elem] = metal::exp(tmp);
}

// body: a fused "x * sigmoid(x) + bias[col]" with a template int parameter for the row length
template <typename T, int COLS>
[[kernel]] void custom_kernel_swish_bias(const device T* x [[buffer(0)]], const device T* bias [[buffer(1)]],
                                         device T* out [[buffer(2)]],
                                         uint3 thread_position_in_grid [[thread_position_in_grid]],
                                         uint3 threads_per_grid [[threads_per_grid]]) {
  uint i = thread_position_in_grid.x;
  if (i >= threads_per_grid.x) return;
  float v = static_cast<float>(x[i]);
  out[i] = static_cast<T>(v / (1.0f + metal::exp(-v)) + static_cast<float>(bias[i % COLS]));
}

// body: per-threadgroup partial dot product written by the first thread (threadgroup memory + barrier)
template <typename T>
[[kernel]] void custom_kernel_block_dot(const device T* a [[buffer(0)]], const device T* b [[buffer(1)]],
                                        device float* partial [[buffer(2)]],
                                        uint3 thread_position_in_grid [[thread_position_in_grid]],
                                        uint3 thread_position_in_threadgroup [[thread_position_in_threadgroup]],
                                        uint3 threadgroup_position_in_grid [[threadgroup_position_in_grid]],
                                        uint3 threads_per_threadgroup [[threads_per_threadgroup]]) {
  threadgroup float buf[256];
  uint i = thread_position_in_grid.x, l = thread_position_in_threadgroup.x;
  buf[l] = static_cast<float>(a[i]) * static_cast<float>(b[i]);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (l == 0) {
    float s = 0;
    for (uint k = 0; k < threads_per_threadgroup.x; ++k) s += buf[k];
    partial[threadgroup_position_in_grid.x] = s;
  }
}

template [[host_name("custom_kernel_strided_exp_float")]] [[kernel]] decltype(custom_kernel_strided_exp<float>) custom_kernel_strided_exp<float>;
template [[host_name("custom_kernel_strided_exp_half")]] [[kernel]] decltype(custom_kernel_strided_exp<half>) custom_kernel_strided_exp<half>;
template [[host_name("custom_kernel_swish_bias_float_64")]] [[kernel]] decltype(custom_kernel_swish_bias<float, 64>) custom_kernel_swish_bias<float, 64>;
template [[host_name("custom_kernel_swish_bias_bfloat_64")]] [[kernel]] decltype(custom_kernel_swish_bias<bfloat, 64>) custom_kernel_swish_bias<bfloat, 64>;
template [[host_name("custom_kernel_block_dot_float")]] [[kernel]] decltype(custom_kernel_block_dot<float>) custom_kernel_block_dot<float>;
template [[host_name("custom_kernel_block_dot_half")]] [[kernel]] decltype(custom_kernel_block_dot<half>) custom_kernel_block_dot<half>;
