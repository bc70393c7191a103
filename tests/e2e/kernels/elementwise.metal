// Elementwise kernels over float, half and bfloat with casts between them. Written for metal2vk's e2e tests.
#include <metal_stdlib>
using namespace metal;

// out = a * b + c, then squared-and-scaled: d = out * 0.5 - a.
kernel void ew_f32(device const float* a [[buffer(0)]], device const float* b [[buffer(1)]],
                   device const float* c [[buffer(2)]], device float* out [[buffer(3)]], device float* d [[buffer(4)]],
                   constant uint& n [[buffer(5)]], uint i [[thread_position_in_grid]]) {
  if (i >= n) return;
  float r = a[i] * b[i] + c[i];
  out[i] = r;
  d[i] = r * 0.5f - a[i];
}

// Same op entirely in half precision.
kernel void ew_f16(device const half* a [[buffer(0)]], device const half* b [[buffer(1)]],
                   device const half* c [[buffer(2)]], device half* out [[buffer(3)]],
                   uint i [[thread_position_in_grid]], uint n [[threads_per_grid]]) {
  if (i >= n) return;
  half p = a[i] * b[i];
  out[i] = p + c[i];
}

// bfloat in, float math, bfloat out; also max/min in bfloat.
kernel void ew_bf16(device const bfloat* a [[buffer(0)]], device const bfloat* b [[buffer(1)]],
                    device bfloat* out [[buffer(2)]], device bfloat* mx [[buffer(3)]],
                    uint i [[thread_position_in_grid]]) {
  float fa = float(a[i]), fb = float(b[i]);
  out[i] = bfloat(fa * fb - 0.25f);
  mx[i] = max(a[i], b[i]);
}

// Casts: float -> half, half -> float (+1), float -> int (truncation), int -> float, uchar -> float, float -> bfloat.
kernel void casts(device const float* f [[buffer(0)]], device const int* k [[buffer(1)]],
                  device const uchar* u8 [[buffer(2)]], device half* to_half [[buffer(3)]],
                  device float* half_back [[buffer(4)]], device int* to_int [[buffer(5)]],
                  device float* from_int [[buffer(6)]], device float* from_u8 [[buffer(7)]],
                  device bfloat* to_bf [[buffer(8)]], uint i [[thread_position_in_grid]]) {
  half h = half(f[i]);
  to_half[i] = h;
  half_back[i] = float(h) + 1.0f;
  to_int[i] = int(f[i] * 100.0f);
  from_int[i] = float(k[i]) * 0.5f;
  from_u8[i] = float(u8[i]) / 255.0f;
  to_bf[i] = bfloat(f[i]);
}

// Math on half: exp, tanh-like, sqrt, fma, clamp. Inputs in [-1, 1).
kernel void half_math(device const half* x [[buffer(0)]], device half* e [[buffer(1)]], device half* s [[buffer(2)]],
                      device half* cl [[buffer(3)]], device half* f [[buffer(4)]], uint i [[thread_position_in_grid]]) {
  half v = x[i];
  e[i] = exp(v);
  s[i] = sqrt(abs(v));
  cl[i] = clamp(v * half(3.0), half(-1.5), half(2.0));
  f[i] = fma(v, v, half(0.5));
}

// Math on bfloat via float: sigmoid and silu, rounded to bfloat.
kernel void bfloat_math(device const bfloat* x [[buffer(0)]], device bfloat* sig [[buffer(1)]],
                        device bfloat* silu [[buffer(2)]], uint i [[thread_position_in_grid]]) {
  float v = float(x[i]);
  float s = 1.0f / (1.0f + exp(-v));
  sig[i] = bfloat(s);
  silu[i] = bfloat(v * s);
}

// Integer widths: char/short/long/ulong arithmetic, shifts, popcount, clz.
kernel void int_ops(device const char* c8 [[buffer(0)]], device const short* s16 [[buffer(1)]],
                    device const long* l64 [[buffer(2)]], device const uint* u32 [[buffer(3)]],
                    device long* out64 [[buffer(4)]], device short* out16 [[buffer(5)]],
                    device uint* bits [[buffer(6)]], device ulong* mixed [[buffer(7)]],
                    uint i [[thread_position_in_grid]]) {
  out64[i] = l64[i] * long(c8[i]) + (l64[i] >> 3);
  out16[i] = short(s16[i] * short(3) - short(c8[i]));
  bits[i] = popcount(u32[i]) + (clz(u32[i] | 1u) << 8);
  mixed[i] = (ulong(u32[i]) << 20) ^ ulong(l64[i]);
}
