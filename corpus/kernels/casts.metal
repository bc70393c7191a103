// Type casts, MLX "copy" style: one templated kernel, instantiated for each (in, out) pair.
#include <metal_stdlib>
using namespace metal;

template <typename T, typename U>
[[kernel]] void copy_v(device const T* src [[buffer(0)]], device U* dst [[buffer(1)]],
                       uint index [[thread_position_in_grid]]) {
  dst[index] = static_cast<U>(src[index]);
}

#define instantiate_copy(tname, T, uname, U) \
  template [[host_name("copy_" #tname "_" #uname)]] [[kernel]] decltype(copy_v<T, U>) copy_v<T, U>;

instantiate_copy(float, float, half, half)
instantiate_copy(half, half, float, float)
instantiate_copy(float, float, bfloat, bfloat)
instantiate_copy(bfloat, bfloat, float, float)
instantiate_copy(int, int, float, float)
instantiate_copy(float, float, int, int)
instantiate_copy(uchar, uint8_t, float, float)
