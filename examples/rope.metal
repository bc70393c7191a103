// Rotary position embedding (non-interleaved halves): x is [seq][heads][dim]; for i < dim/2 and position p,
// theta = p * base^(-2i/dim); (x[i], x[i + dim/2]) is rotated by theta. One thread per (i, head, position).
#include <metal_stdlib>
using namespace metal;

kernel void rope(device const float* x [[buffer(0)]], device float* y [[buffer(1)]],
                 constant uint& heads [[buffer(2)]], constant uint& dim [[buffer(3)]], constant float& base [[buffer(4)]],
                 uint3 gid [[thread_position_in_grid]]) {
  const uint i = gid.x, h = gid.y, pos = gid.z;
  const uint half_dim = dim / 2;
  const float inv_freq = pow(base, -2.0f * float(i) / float(dim));
  const float theta = float(pos) * inv_freq;
  const float c = cos(theta), s = sin(theta);
  const uint at = (pos * heads + h) * dim;
  const float a = x[at + i], b = x[at + i + half_dim];
  y[at + i] = a * c - b * s;
  y[at + i + half_dim] = a * s + b * c;
}
