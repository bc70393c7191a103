// ENTRIES: copy_float32 copy_float16 copy_bfloat16 copy_int32 copy_uint8 scale_float32 scale_float16
// MLX-style instantiate macros: [[host_name]] produced by #define bodies with token pasting and stringizing.
#include <metal_stdlib>
using namespace metal;

#define instantiate_kernel(name, func, ...) \
  template [[host_name(name)]] [[kernel]] decltype(func<__VA_ARGS__>) func<__VA_ARGS__>;

template <typename T>
[[kernel]] void copy_v(device const T* src [[buffer(0)]], device T* dst [[buffer(1)]],
                       constant size_t& n [[buffer(2)]], uint gid [[thread_position_in_grid]]) {
  if (gid < n) dst[gid] = src[gid];
}

template <typename T, int S>
[[kernel]] void scale_v(device T* x [[buffer(0)]], uint gid [[thread_position_in_grid]]) {
  x[gid] = T(float(x[gid]) * float(S));
}

#define instantiate_copy(tname, type) instantiate_kernel("copy_" #tname, copy_v, type)
#define instantiate_scale(tname, type) instantiate_kernel("scale_" #tname, scale_v, type, 3)

instantiate_copy(float32, float)
instantiate_copy(float16, half)
instantiate_copy(bfloat16, bfloat)
instantiate_copy(int32, int)
instantiate_copy(uint8, uint8_t)
instantiate_scale(float32, float)
instantiate_scale(float16, half)
