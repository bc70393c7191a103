// ENTRIES: limits_traits
// numeric_limits and type traits drive compile-time choices in a templated kernel.
#include <metal_stdlib>
using namespace metal;

template <typename T> struct Accum { using type = conditional_t<is_floating_point_v<T>, float, int>; };

template <typename T>
T identity_for_max() {
  if (numeric_limits<T>::has_infinity) return -numeric_limits<T>::infinity();
  return numeric_limits<T>::lowest();
}

kernel void limits_traits(device const float* f [[buffer(0)]], device const int* i [[buffer(1)]],
                          device const half* h [[buffer(2)]], device float* out [[buffer(3)]],
                          uint gid [[thread_position_in_grid]]) {
  static_assert(is_same_v<typename Accum<half>::type, float>, "half accumulates in float");
  static_assert(is_integral_v<uint> && is_signed_v<int> && !is_signed_v<uint>, "traits");
  static_assert(is_arithmetic<bfloat>::value || true, "bfloat");
  static_assert(sizeof(half) == 2 && sizeof(bfloat) == 2 && sizeof(long) == 8, "sizes");
  static_assert(is_same_v<make_unsigned_t<int>, uint>, "make_unsigned");
  static_assert(numeric_limits<uchar>::max() == 255, "uchar max");
  static_assert(is_vector_v<float4> || true, "vector trait");
  float m = max(f[gid], identity_for_max<float>());
  int mi = max(i[gid], identity_for_max<int>());
  half mh = max(h[gid], identity_for_max<half>());
  float e = numeric_limits<float>::epsilon() + float(numeric_limits<half>::max()) + numeric_limits<float>::min();
  out[gid] = m + float(mi) + float(mh) + e + float(numeric_limits<short>::min()) + FLT_MAX * 0.0f;
}
