// Bool vectors of 8 and 16 lanes (`vec<bool, 8>`: a mask fragment as attention kernels keep one), filled lane by
// lane under a bounds check, carried around loops and read back lane by lane. SPIR-V vectors have at most 4 lanes.
#include <metal_stdlib>
using namespace metal;

template <typename T, int N>
kernel void mask_select(device const T* x [[buffer(0)]], device const bool* m [[buffer(1)]], device T* y [[buffer(2)]],
                        constant uint& n [[buffer(3)]], uint gid [[thread_position_in_grid]]) {
  vec<bool, N> frag;
  for (int k = 0; k < N; k++) {
    uint i = gid * N + k;
    if (i < n)
      frag[k] = m[i];
    else
      frag[k] = false;
  }
  vec<bool, N> kept = frag;
  for (int k = 0; k < N; k++) {
    uint i = gid * N + k;
    if (i < n) y[i] = kept[k] ? x[i] : T(-1);
  }
}
template [[host_name("mask_select8_f32")]] [[kernel]] decltype(mask_select<float, 8>) mask_select<float, 8>;
template [[host_name("mask_select16_f16")]] [[kernel]] decltype(mask_select<half, 16>) mask_select<half, 16>;
