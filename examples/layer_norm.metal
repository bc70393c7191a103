// Layer norm over rows: y = (x - mean) / sqrt(var + eps) * w + b. One threadgroup per row; tree reductions in
// threadgroup memory with barriers only (no simd functions). The threadgroup size must be a power of two <= 1024.
#include <metal_stdlib>
using namespace metal;

struct LayerNormParams {
  uint cols;
  float eps;
};

static float reduce_sum(threadgroup float* buf, float v, uint tid, uint tpg) {
  buf[tid] = v;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (uint s = tpg / 2; s > 0; s >>= 1) {
    if (tid < s) buf[tid] += buf[tid + s];
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  float total = buf[0];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  return total;
}

kernel void layer_norm(device const float* x [[buffer(0)]], device const float* w [[buffer(1)]],
                       device const float* b [[buffer(2)]], device float* y [[buffer(3)]],
                       constant LayerNormParams& p [[buffer(4)]],
                       uint row [[threadgroup_position_in_grid]], uint tid [[thread_index_in_threadgroup]],
                       uint tpg [[threads_per_threadgroup]]) {
  threadgroup float buf[1024];
  device const float* in = x + row * p.cols;
  float s = 0.0f;
  for (uint c = tid; c < p.cols; c += tpg) s += in[c];
  float mean = reduce_sum(buf, s, tid, tpg) / float(p.cols);
  float q = 0.0f;
  for (uint c = tid; c < p.cols; c += tpg) {
    float d = in[c] - mean;
    q += d * d;
  }
  float var = reduce_sum(buf, q, tid, tpg) / float(p.cols);
  float inv = rsqrt(var + p.eps);
  for (uint c = tid; c < p.cols; c += tpg) y[row * p.cols + c] = (in[c] - mean) * inv * w[c] + b[c];
}
