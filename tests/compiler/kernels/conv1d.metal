// ENTRIES: conv1d_depthwise
// Depthwise causal 1-D convolution (as in Mamba/SSM blocks) with a kernel width function constant, padding checks.
#include <metal_stdlib>
using namespace metal;

constant int kw [[function_constant(0)]];
constant int K = is_function_constant_defined(kw) ? kw : 4;

kernel void conv1d_depthwise(device const float* x [[buffer(0)]], device const float* w [[buffer(1)]],
                             device const float* bias [[buffer(2)]], device float* y [[buffer(3)]],
                             constant int& length [[buffer(4)]], constant int& channels [[buffer(5)]],
                             uint2 pos [[thread_position_in_grid]]) {
  int c = int(pos.x), t = int(pos.y);
  if (c >= channels || t >= length) return;
  float acc = bias[c];
  for (int k = 0; k < K; ++k) {
    int src = t - (K - 1) + k;
    if (src < 0) continue;
    acc = fma(w[c * K + k], x[src * channels + c], acc);
  }
  y[t * channels + c] = acc / (1.0f + exp(-acc));
}
