// ENTRIES: copy_strided_nd copy_strided_2d
// Copy from an arbitrarily strided N-D tensor (shape/strides arrays in constant memory, 64-bit element offsets).
#include <metal_stdlib>
using namespace metal;

template <typename IdxT>
IdxT elem_to_loc(uint elem, constant const int* shape, constant const int64_t* strides, int ndim) {
  IdxT loc = 0;
  for (int i = ndim - 1; i >= 0 && elem > 0; --i) {
    loc += IdxT(elem % shape[i]) * IdxT(strides[i]);
    elem /= shape[i];
  }
  return loc;
}

kernel void copy_strided_nd(device const float* src [[buffer(0)]], device float* dst [[buffer(1)]],
                            constant const int* shape [[buffer(2)]], constant const int64_t* strides [[buffer(3)]],
                            constant int& ndim [[buffer(4)]], uint gid [[thread_position_in_grid]]) {
  dst[gid] = src[elem_to_loc<int64_t>(gid, shape, strides, ndim)];
}

kernel void copy_strided_2d(device const half* src [[buffer(0)]], device float* dst [[buffer(1)]],
                            constant int64_t* strides [[buffer(2)]], uint2 pos [[thread_position_in_grid]],
                            uint2 grid [[threads_per_grid]]) {
  int64_t loc = int64_t(pos.x) * strides[1] + int64_t(pos.y) * strides[0];
  dst[pos.y * grid.x + pos.x] = float(src[loc]);
}
