// RMS norm with half input/output and float accumulation: y = half(x * rsqrt(mean(x^2) + eps) * w).
// One threadgroup per row; threadgroup-memory tree reduction (power-of-two threadgroup).
#include <metal_stdlib>
using namespace metal;

kernel void rms_norm(device const half* x [[buffer(0)]], device const half* w [[buffer(1)]],
                     device half* y [[buffer(2)]], constant uint& cols [[buffer(3)]], constant float& eps [[buffer(4)]],
                     uint row [[threadgroup_position_in_grid]], uint tid [[thread_index_in_threadgroup]],
                     uint tpg [[threads_per_threadgroup]]) {
  threadgroup float buf[1024];
  device const half* in = x + row * cols;
  float s = 0.0f;
  for (uint c = tid; c < cols; c += tpg) {
    float v = float(in[c]);
    s += v * v;
  }
  buf[tid] = s;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (uint stride = tpg / 2; stride > 0; stride >>= 1) {
    if (tid < stride) buf[tid] += buf[tid + stride];
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  float inv = rsqrt(buf[0] / float(cols) + eps);
  for (uint c = tid; c < cols; c += tpg) y[row * cols + c] = half(float(in[c]) * inv * float(w[c]));
}
