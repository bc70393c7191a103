// ENTRIES: simd_shuffles
// simd_shuffle, _up, _down, _xor, _rotate_up/_down, broadcast, broadcast_first, shuffle_and_fill on several types.
#include <metal_stdlib>
using namespace metal;

kernel void simd_shuffles(device const float* in [[buffer(0)]], device float* out [[buffer(1)]],
                          device const half2* h [[buffer(2)]], device half2* hout [[buffer(3)]],
                          device const bfloat* b [[buffer(4)]], device bfloat* bout [[buffer(5)]],
                          device int4* iout [[buffer(6)]],
                          uint gid [[thread_position_in_grid]], ushort lane [[thread_index_in_simdgroup]]) {
  float x = in[gid];
  float r = simd_shuffle(x, ushort(31 - lane)) + simd_shuffle_up(x, 1) + simd_shuffle_down(x, 2) +
            simd_shuffle_xor(x, 16) + simd_shuffle_rotate_up(x, 3) + simd_shuffle_rotate_down(x, 5) +
            simd_broadcast(x, 7) + simd_broadcast_first(x);
  r += simd_shuffle_and_fill_up(x, -x, 4) + simd_shuffle_and_fill_down(x, -x, 4, 8);
  out[gid] = r;
  half2 hv = h[gid];
  hout[gid] = simd_shuffle_xor(hv, 1) + simd_shuffle_down(hv, 8);
  bfloat bv = b[gid];
  bout[gid] = simd_shuffle(bv, ushort(lane ^ 3)) + simd_broadcast_first(bv);
  int4 iv = int4(int(gid));
  iout[gid] = simd_shuffle_down(iv, 1) + simd_shuffle_rotate_up(iv, 31);
}
