// Threadgroup pointers as the specification lets a kernel use them: cast from a threadgroup-memory argument into
// regions, chosen between regions by a condition, advanced in loops (a pointer carried from one iteration to the
// next), and passed to a function that advances it itself.
//
// tg_walk, for thread t of group g (64 threads): A = x[64 g ...], B = 2 A (two regions of one argument);
// y[64 g + t] = sum over k < n of (t odd ? B : A)[t % 8 + 8 k]  +  sum over k < n of A[8 (t / 8) + k].
// tg_tile: the same with A and B two threadgroup arrays of the kernel, and the row walked backwards.
#include <metal_stdlib>
using namespace metal;

// walks `count` elements `stride` apart
float sum_strided(threadgroup const float* p, uint count, uint stride) {
  float s = 0;
  for (uint k = 0; k < count; ++k) {
    s += *p;
    p += stride;
  }
  return s;
}

kernel void tg_walk(device const float* x [[buffer(0)]], device float* y [[buffer(1)]],
                    constant uint& n [[buffer(2)]], threadgroup uchar* shared [[threadgroup(0)]],
                    uint t [[thread_index_in_threadgroup]], uint g [[threadgroup_position_in_grid]]) {
  threadgroup float* a = (threadgroup float*)shared;
  threadgroup float* b = (threadgroup float*)(shared + 64 * sizeof(float));
  uint i = g * 64 + t;
  a[t] = x[i];
  b[t] = 2 * x[i];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  threadgroup float* column = (t & 1) ? b : a;
  float s = sum_strided(column + t % 8, n, 8);
  threadgroup const float* row = a + (t / 8) * 8;
  float r = 0;
  for (uint k = 0; k < n; ++k) {
    r += row[0];
    row += 1;
  }
  y[i] = s + r;
}

kernel void tg_tile(device const float* x [[buffer(0)]], device float* y [[buffer(1)]],
                    constant uint& n [[buffer(2)]], uint t [[thread_index_in_threadgroup]],
                    uint g [[threadgroup_position_in_grid]]) {
  threadgroup float a[64];
  threadgroup float b[64];
  uint i = g * 64 + t;
  a[t] = x[i];
  b[t] = 2 * x[i];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  threadgroup float* column = (t & 1) ? b : a;
  float s = sum_strided(column + t % 8, n, 8);
  threadgroup const float* row = a + (t / 8) * 8 + 7;
  float r = 0;
  for (uint k = 0; k < n; ++k) {
    r += *row;
    --row;
  }
  y[i] = s + r;
}
