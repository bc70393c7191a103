// ENTRIES: strided_copy
// Helper functions that take Metal array parameters in constant memory (`constant int shape[3]`), as shape/stride
// helpers in real code do: the parameter is a pointer.
#include <metal_stdlib>
using namespace metal;

static uint offset_of(uint i, constant const int shape[3], constant const int64_t strides[3]) {
  uint off = 0;
  for (int d = 2; d >= 0; --d) {
    off += (i % shape[d]) * strides[d];
    i /= shape[d];
  }
  return off;
}

kernel void strided_copy(const device float* x [[buffer(0)]], device float* y [[buffer(1)]],
                         constant const int* shape [[buffer(2)]], constant const int64_t* strides [[buffer(3)]],
                         uint i [[thread_position_in_grid]]) {
  y[i] = x[offset_of(i, shape, strides)];
}
