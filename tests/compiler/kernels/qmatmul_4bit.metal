// ENTRIES: qmv_4bit_half qmv_4bit_float
// 4-bit affine-quantized matrix-vector product (group size 64): unpack nibbles from uint32 words with shifts and
// masks, per-group scale and bias, simd_sum.
#include <metal_stdlib>
using namespace metal;

template <typename T, int GROUP>
[[kernel]] void qmv_4bit(device const uint32_t* w [[buffer(0)]], device const T* scales [[buffer(1)]],
                         device const T* biases [[buffer(2)]], device const T* x [[buffer(3)]], device T* y [[buffer(4)]],
                         constant int& in_dim [[buffer(5)]], constant int& out_dim [[buffer(6)]],
                         uint tg [[threadgroup_position_in_grid]], uint sg [[simdgroup_index_in_threadgroup]],
                         uint lane [[thread_index_in_simdgroup]]) {
  int row = int(tg) * 2 + int(sg);
  if (row >= out_dim) return;
  int words_per_row = in_dim / 8;
  int groups_per_row = in_dim / GROUP;
  device const uint32_t* wr = w + size_t(row) * words_per_row;
  float acc = 0.0f;
  for (int wi = int(lane); wi < words_per_row; wi += 32) {
    uint32_t word = wr[wi];
    int col = wi * 8;
    int g = col / GROUP;
    float s = float(scales[row * groups_per_row + g]);
    float b = float(biases[row * groups_per_row + g]);
    float part = 0.0f, xs = 0.0f;
#pragma unroll
    for (int k = 0; k < 8; ++k) {
      float q = float((word >> (4 * k)) & 0xfu);
      float xv = float(x[col + k]);
      part += q * xv;
      xs += xv;
    }
    acc += s * part + b * xs;
  }
  acc = simd_sum(acc);
  if (lane == 0) y[row] = T(acc);
}
template [[host_name("qmv_4bit_half")]] [[kernel]] decltype(qmv_4bit<half, 64>) qmv_4bit<half, 64>;
template [[host_name("qmv_4bit_float")]] [[kernel]] decltype(qmv_4bit<float, 64>) qmv_4bit<float, 64>;
