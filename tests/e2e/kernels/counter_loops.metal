// A loop nest in the style of MLX's LoopedElemToLoc (reduction/reduce_col.h's col_reduce_small with NDIMS 5):
// three nested counters over shape[0..2] with strides[0..2] are advanced by n steps, the innermost by whole
// strides, carrying into the middle counter by a loop of its own. out[n] is the offset of element n, n the thread's
// position in its threadgroup along x or (as col_reduce_small has it) along y.
// Written for metal2vk's e2e tests.
#include <metal_stdlib>
using namespace metal;

template <int AXIS>
void counter_loops(device int* out, constant int* shape, constant int* strides, uint3 lid) {
  int n0 = int(lid[AXIS]);
  int n = n0;
  int i2 = 0, o2 = 0, i1 = 0, o1 = 0, i0 = 0, o0 = 0;
  while (true) {  // advance the innermost counter by n
    i2 += n;
    o2 += n * strides[2];
    if (i2 < shape[2]) break;
    int extra = i2 - shape[2];
    if (extra >= shape[2]) {  // carry several: advance the middle counter by m
      int m = 1 + extra / shape[2];
      extra = extra % shape[2];
      while (true) {
        i1 += m;
        o1 += m * strides[1];
        if (i1 < shape[1]) break;
        int extra1 = i1 - shape[1];
        if (extra1 >= shape[1]) {  // carry several into the outer counter
          i0 += 1 + extra1 / shape[1];
          o0 = i0 * strides[0];
          extra1 = extra1 % shape[1];
        } else {
          i0++;
          o0 += strides[0];
        }
        i1 = 0;
        o1 = o0;
        if (extra1 <= 0) break;
        m = extra1;
      }
    } else {  // carry one
      i1++;
      o1 += strides[1];
      if (i1 >= shape[1]) {
        i1 = 0;
        i0++;
        o0 += strides[0];
        o1 = o0;
      }
    }
    i2 = 0;
    o2 = o1;
    if (extra <= 0) break;
    n = extra;
  }
  out[n0] = o2;
}

kernel void counter_loops_x(device int* out [[buffer(0)]], constant int* shape [[buffer(1)]],
                            constant int* strides [[buffer(2)]], uint3 lid [[thread_position_in_threadgroup]]) {
  counter_loops<0>(out, shape, strides, lid);
}
kernel void counter_loops_y(device int* out [[buffer(0)]], constant int* shape [[buffer(1)]],
                            constant int* strides [[buffer(2)]], uint3 lid [[thread_position_in_threadgroup]]) {
  counter_loops<1>(out, shape, strides, lid);
}
