// Post-rewrite test kernels: vector constructors, packed vectors, numeric_limits, type traits, as_type, pack.
#include <metal_stdlib>
using namespace metal;

static_assert(is_same_v<vec<float, 4>, float4>, "");
static_assert(is_floating_point_v<half> && is_floating_point_v<bfloat> && !is_floating_point_v<int>, "");
static_assert(is_integral_v<uint> && is_signed_v<int> && is_unsigned_v<ushort> && !is_signed_v<uint>, "");
static_assert(is_same_v<make_unsigned_t<int>, uint> && is_same_v<make_signed_t<ulong>, long>, "");
static_assert(is_same_v<make_unsigned_t<int4>, uint4>, "");
static_assert(is_vector_v<float4> && !is_vector_v<float> && vec_elements<half3>::value == 3, "");
static_assert(is_same_v<remove_cv_t<const volatile int>, int> && is_same_v<decay_t<const float &>, float>, "");
static_assert(is_same_v<conditional_t<true, int, float>, int> && is_same_v<enable_if_t<true, half>, half>, "");
static_assert(sizeof(packed_float3) == 12 && sizeof(float3) == 16 && sizeof(packed_half4) == 8, "");
static_assert(numeric_limits<int>::max() == 2147483647 && numeric_limits<int>::min() == -2147483647 - 1, "");
static_assert(numeric_limits<uint>::max() == 0xffffffffu && numeric_limits<char>::is_signed, "");
static_assert(numeric_limits<float>::epsilon() == 0x1.0p-23f && numeric_limits<float>::max() == FLT_MAX, "");
static_assert(numeric_limits<half>::max() == HALF_MAX && numeric_limits<half>::digits == 11, "");
static_assert(float(numeric_limits<bfloat>::epsilon()) == 0.0078125f, "");
static_assert(numeric_limits<float>::infinity() > numeric_limits<float>::max(), "");
static_assert(is_same_v<integral_constant<int, 3>::value_type, int> && true_type::value, "");

#define KERNEL __attribute__((annotate("m2v.kernel")))
#define BUF(n) __attribute__((annotate("m2v.buffer", n)))
#define GID __attribute__((annotate("m2v.builtin", "thread_position_in_grid")))

KERNEL void ctors(device float4 *o BUF(0), device half4 *h BUF(1), device int3 *i BUF(2), device bfloat2 *b BUF(3),
                  uint gid GID) {
  float2 f2 = __m2v::vec_ctor<float2>(1.0f, float(gid));
  o[gid] = __m2v::vec_ctor<float4>(f2, 3, half(4.0f)) + __m2v::vec_ctor<float4>(2) + __m2v::vec_ctor<float4>(h[gid]) +
           __m2v::vec_ctor<float4>(f2, f2) + __m2v::vec_ctor<float4>(1, f2, b[gid].x) + __m2v::vec_ctor<float4>();
  h[gid] = __m2v::vec_ctor<half4>(o[gid]) + __m2v::vec_ctor<vec<half, 4>>(half(1));
  i[gid] = __m2v::vec_ctor<int3>(o[gid].xyz) + __m2v::vec_ctor<int3>(__m2v::vec_ctor<bool3>(o[gid].xyz > 0.0f));
  b[gid] = __m2v::vec_ctor<bfloat2>(f2) * b[gid] + bfloat(2.0f);
  bool4 m = __m2v::vec_ctor<bool4>(o[gid] < 1.0f);
  o[gid + 1] = select(o[gid], __m2v::vec_ctor<float4>(0), m);
}

KERNEL void packed(device packed_float3 *p BUF(0), device float3 *o BUF(1), device uint *u BUF(2), uint gid GID) {
  packed_float3 t;
  t.x = p[gid].x; t.y = p[gid].y; t.z = p[gid].z;
  float3 v = t;
  t = v * 2.0f;
  t += v;
  o[gid] = t * 1.0f + float3(t[1]) + cross(float3(t), v);
  u[gid] = pack_float_to_unorm4x8(o[gid].xyzz) ^ pack_float_to_snorm2x16(o[gid].xy) ^ pack_half_to_unorm2x16(half2(half(1.0f))) ^
           as_type<uint>(unpack_unorm4x8_to_float(u[gid]).x + unpack_snorm4x8_to_float(u[gid]).y +
                         unpack_snorm2x16_to_float(u[gid]).x + float(unpack_unorm2x16_to_half(u[gid]).y));
  u[gid + 1] = as_type<uint>(o[gid].x) + as_type<uint2>(o[gid].xy).y + as_type<ushort>(half(1)) +
               as_type<ushort>(bfloat(1.0f)) + as_type<uint>(numeric_limits<float>::quiet_NaN());
}

KERNEL void limits(device float *o BUF(0), device half *h BUF(1), device int *i BUF(2)) {
  o[0] = numeric_limits<float>::infinity() + numeric_limits<float>::lowest() + numeric_limits<float>::min() +
         numeric_limits<float>::denorm_min() + INFINITY + FLT_MAX + M_PI_F + MAXFLOAT;
  h[0] = numeric_limits<half>::max() + numeric_limits<half>::lowest() + numeric_limits<half>::epsilon() +
         HALF_MAX + M_PI_H + __m2v::cvt<half>(numeric_limits<bfloat>::epsilon());
  i[0] = numeric_limits<int>::max() + numeric_limits<short>::min() + numeric_limits<uchar>::max() - INT_MAX;
  metal::array<float, 4> a = {{1, 2, 3, 4}};
  o[1] = a[2] + a.size();
}
