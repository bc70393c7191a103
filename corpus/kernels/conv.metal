// 1-D depthwise convolution (channels-last [L, C], kernel [K, C], 'same' padding, optional dilation) and a 2-D
// bilinear grid_sample forward (NHWC input, grid in [-1, 1], align_corners = false, zero padding).
#include <metal_stdlib>
using namespace metal;

template <typename T>
[[kernel]] void depthwise_conv1d(const device T* x [[buffer(0)]], const device T* w [[buffer(1)]],
                                 device T* y [[buffer(2)]], constant int4& p [[buffer(3)]],  // L, C, K, dilation
                                 uint2 pos [[thread_position_in_grid]]) {
  int c = pos.x, t = pos.y, L = p.x, C = p.y, K = p.z, dil = p.w;
  int pad = (K - 1) * dil / 2;
  float acc = 0;
  for (int k = 0; k < K; ++k) {
    int src = t + k * dil - pad;
    if (src >= 0 && src < L) acc += float(x[src * C + c]) * float(w[k * C + c]);
  }
  y[t * C + c] = static_cast<T>(acc);
}

[[kernel]] void grid_sample_bilinear(const device float* x [[buffer(0)]], const device float2* grid [[buffer(1)]],
                                     device float* out [[buffer(2)]], constant int4& dims [[buffer(3)]],  // H, W, C, Hout*Wout
                                     uint2 pos [[thread_position_in_grid]]) {
  int H = dims.x, W = dims.y, C = dims.z;
  uint c = pos.x, o = pos.y;
  float2 g = grid[o];
  float ix = ((g.x + 1) * W - 1) * 0.5f, iy = ((g.y + 1) * H - 1) * 0.5f;
  int x0 = int(floor(ix)), y0 = int(floor(iy));
  float fx = ix - x0, fy = iy - y0;
  float acc = 0;
  for (int dy = 0; dy < 2; ++dy)
    for (int dx = 0; dx < 2; ++dx) {
      int xx = x0 + dx, yy = y0 + dy;
      float wgt = (dx ? fx : 1 - fx) * (dy ? fy : 1 - fy);
      if (xx >= 0 && xx < W && yy >= 0 && yy < H) acc += wgt * x[(yy * W + xx) * C + c];
    }
  out[o * C + c] = acc;
}

template [[host_name("depthwise_conv1d_float")]] [[kernel]] decltype(depthwise_conv1d<float>) depthwise_conv1d<float>;
template [[host_name("depthwise_conv1d_half")]] [[kernel]] decltype(depthwise_conv1d<half>) depthwise_conv1d<half>;
template [[host_name("depthwise_conv1d_bfloat")]] [[kernel]] decltype(depthwise_conv1d<bfloat>) depthwise_conv1d<bfloat>;
