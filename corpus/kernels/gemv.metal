// Matrix-vector products y = W x (W: [out, in], row-major) and affine-quantized variants
// (w = scale * q + bias per group of `group_size` inputs; q packed LSB-first in uint32: 8 x 4-bit or 4 x 8-bit).
#include <metal_stdlib>
using namespace metal;

// One simdgroup per output row, 4 rows per threadgroup.
template <typename T>
[[kernel]] void gemv_simd(const device T* w [[buffer(0)]], const device T* x [[buffer(1)]], device T* y [[buffer(2)]],
                          constant int& in_dim [[buffer(3)]], constant int& out_dim [[buffer(4)]],
                          uint tgid [[threadgroup_position_in_grid]], uint lane [[thread_index_in_simdgroup]],
                          uint sg [[simdgroup_index_in_threadgroup]]) {
  int row = tgid * 4 + sg;
  if (row >= out_dim) return;
  const device T* wr = w + size_t(row) * in_dim;
  float acc = 0;
  for (int i = lane; i < in_dim; i += 32) acc += static_cast<float>(wr[i]) * static_cast<float>(x[i]);
  acc = simd_sum(acc);
  if (lane == 0) y[row] = static_cast<T>(acc);
}

// One threadgroup (64 threads) per output row, threadgroup tree reduction.
template <typename T>
[[kernel]] void gemv_tree(const device T* w [[buffer(0)]], const device T* x [[buffer(1)]], device T* y [[buffer(2)]],
                          constant int& in_dim [[buffer(3)]], constant int& out_dim [[buffer(4)]],
                          uint row [[threadgroup_position_in_grid]], uint lid [[thread_position_in_threadgroup]]) {
  threadgroup float buf[64];
  const device T* wr = w + size_t(row) * in_dim;
  float acc = 0;
  for (int i = lid; i < in_dim; i += 64) acc += static_cast<float>(wr[i]) * static_cast<float>(x[i]);
  buf[lid] = acc;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (uint s = 32; s > 0; s >>= 1) {
    if (lid < s) buf[lid] += buf[lid + s];
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  if (lid == 0) y[row] = static_cast<T>(buf[0]);
}

// Quantized: w_q [out, in * bits / 32] uint32, scales/biases [out, in / group_size].
template <typename T, int bits, int group_size>
[[kernel]] void qmv_tree(const device uint32_t* wq [[buffer(0)]], const device T* scales [[buffer(1)]],
                         const device T* biases [[buffer(2)]], const device T* x [[buffer(3)]],
                         device T* y [[buffer(4)]], constant int& in_dim [[buffer(5)]],
                         uint row [[threadgroup_position_in_grid]], uint lid [[thread_position_in_threadgroup]]) {
  constexpr int per_word = 32 / bits;
  constexpr uint32_t mask = (1u << bits) - 1;
  threadgroup float buf[64];
  int words = in_dim / per_word;
  int groups = in_dim / group_size;
  const device uint32_t* wr = wq + size_t(row) * words;
  float acc = 0;
  for (int wi = lid; wi < words; wi += 64) {
    uint32_t packed = wr[wi];
    int base = wi * per_word;
    int g = base / group_size;
    float s = static_cast<float>(scales[size_t(row) * groups + g]);
    float b = static_cast<float>(biases[size_t(row) * groups + g]);
    for (int k = 0; k < per_word; ++k) {
      float q = float((packed >> (k * bits)) & mask);
      acc += (s * q + b) * static_cast<float>(x[base + k]);
    }
  }
  buf[lid] = acc;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (uint st = 32; st > 0; st >>= 1) {
    if (lid < st) buf[lid] += buf[lid + st];
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  if (lid == 0) y[row] = static_cast<T>(buf[0]);
}

// Quantized, one simdgroup per row; reads the packed weights as uint8 bytes through a pointer cast.
template <typename T, int group_size>
[[kernel]] void qmv4_simd(const device uint32_t* wq [[buffer(0)]], const device T* scales [[buffer(1)]],
                          const device T* biases [[buffer(2)]], const device T* x [[buffer(3)]],
                          device T* y [[buffer(4)]], constant int& in_dim [[buffer(5)]],
                          uint row [[threadgroup_position_in_grid]], uint lane [[thread_index_in_simdgroup]]) {
  const device uint8_t* wb = (const device uint8_t*)(wq + size_t(row) * (in_dim / 8));
  int groups = in_dim / group_size;
  float acc = 0;
  for (int byte = lane; byte < in_dim / 2; byte += 32) {
    uint8_t v = wb[byte];
    int i = byte * 2;
    int g = i / group_size;
    float s = static_cast<float>(scales[size_t(row) * groups + g]);
    float b = static_cast<float>(biases[size_t(row) * groups + g]);
    acc += (s * float(v & 0xf) + b) * static_cast<float>(x[i]);
    acc += (s * float(v >> 4) + b) * static_cast<float>(x[i + 1]);
  }
  acc = simd_sum(acc);
  if (lane == 0) y[row] = static_cast<T>(acc);
}

template [[host_name("gemv_simd_float")]] [[kernel]] decltype(gemv_simd<float>) gemv_simd<float>;
template [[host_name("gemv_simd_half")]] [[kernel]] decltype(gemv_simd<half>) gemv_simd<half>;
template [[host_name("gemv_tree_float")]] [[kernel]] decltype(gemv_tree<float>) gemv_tree<float>;
template [[host_name("gemv_tree_half")]] [[kernel]] decltype(gemv_tree<half>) gemv_tree<half>;
template [[host_name("gemv_tree_bfloat")]] [[kernel]] decltype(gemv_tree<bfloat>) gemv_tree<bfloat>;
template [[host_name("qmv_q4_g64_float")]] [[kernel]] decltype(qmv_tree<float, 4, 64>) qmv_tree<float, 4, 64>;
template [[host_name("qmv_q4_g32_half")]] [[kernel]] decltype(qmv_tree<half, 4, 32>) qmv_tree<half, 4, 32>;
template [[host_name("qmv_q8_g64_float")]] [[kernel]] decltype(qmv_tree<float, 8, 64>) qmv_tree<float, 8, 64>;
template [[host_name("qmv_q8_g64_bfloat")]] [[kernel]] decltype(qmv_tree<bfloat, 8, 64>) qmv_tree<bfloat, 8, 64>;
template [[host_name("qmv4_simd_g64_float")]] [[kernel]] decltype(qmv4_simd<float, 64>) qmv4_simd<float, 64>;
