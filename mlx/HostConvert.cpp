// Host-side element conversions (init_value, the CLI's inline and random inputs, tests).
#include <cmath>
#include <cstring>

#include "metal2vk/mlx.h"

namespace m2v::mlx {

uint16_t floatToHalfBits(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000;
  uint32_t exp = (x >> 23) & 0xff;
  uint32_t mant = x & 0x7fffff;
  if (exp == 0xff) return uint16_t(sign | 0x7c00 | (mant ? 0x200 | (mant >> 13) : 0));
  int e = int(exp) - 127 + 15;
  if (e >= 31) return uint16_t(sign | 0x7c00);
  if (e <= 0) {
    if (e < -10) return uint16_t(sign);
    mant |= 0x800000;
    int shift = 14 - e;
    uint32_t h = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1), halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (h & 1))) h++;
    return uint16_t(sign | h);
  }
  uint32_t h = (uint32_t(e) << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) h++;  // may carry into the exponent: correct rounding to inf
  return uint16_t(sign | h);
}

float halfBitsToFloat(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  float v;
  if (exp == 0) v = std::ldexp(float(mant), -24);
  else if (exp == 31) v = mant ? NAN : INFINITY;
  else v = std::ldexp(float(mant | 0x400), int(exp) - 25);
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  bits |= sign;
  std::memcpy(&v, &bits, 4);
  return v;
}

uint16_t floatToBfloat16Bits(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffff) > 0x7f800000) return uint16_t((x >> 16) | 0x40);  // quiet NaN
  uint32_t rounding = 0x7fff + ((x >> 16) & 1);
  return uint16_t((x + rounding) >> 16);
}

float bfloat16BitsToFloat(uint16_t b) {
  uint32_t x = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

// double -> int64 without undefined behaviour: NaN is 0, values past the range saturate.
static int64_t toInt64(double v) {
  if (!(v == v)) return 0;
  if (v >= 9223372036854775807.0) return INT64_MAX;
  if (v <= -9223372036854775808.0) return INT64_MIN;
  return int64_t(v);
}

void encodeElement(Dtype dtype, double v, void* dst) {
  auto put = [&](auto x) { std::memcpy(dst, &x, sizeof(x)); };
  switch (dtype) {
    case Dtype::Bool: put(uint8_t(v != 0)); break;
    case Dtype::UInt8: put(uint8_t(toInt64(v))); break;
    case Dtype::UInt16: put(uint16_t(toInt64(v))); break;
    case Dtype::UInt32: put(uint32_t(toInt64(v))); break;
    case Dtype::UInt64: put(v >= 18446744073709551615.0 ? UINT64_MAX : v >= 9.2e18 ? uint64_t(v) : uint64_t(toInt64(v))); break;
    case Dtype::Int8: put(int8_t(toInt64(v))); break;
    case Dtype::Int16: put(int16_t(toInt64(v))); break;
    case Dtype::Int32: put(int32_t(toInt64(v))); break;
    case Dtype::Int64: put(toInt64(v)); break;
    case Dtype::Float16: put(floatToHalfBits(float(v))); break;
    case Dtype::BFloat16: put(floatToBfloat16Bits(float(v))); break;
    case Dtype::Float32: put(float(v)); break;
    case Dtype::Float64: put(v); break;
    case Dtype::Complex64: {
      float c[2] = {float(v), 0.0f};
      std::memcpy(dst, c, 8);
      break;
    }
  }
}

double decodeElement(Dtype dtype, const void* src) {
  auto get = [&](auto x) {
    std::memcpy(&x, src, sizeof(x));
    return x;
  };
  switch (dtype) {
    case Dtype::Bool: return get(uint8_t()) != 0;
    case Dtype::UInt8: return get(uint8_t());
    case Dtype::UInt16: return get(uint16_t());
    case Dtype::UInt32: return get(uint32_t());
    case Dtype::UInt64: return double(get(uint64_t()));
    case Dtype::Int8: return get(int8_t());
    case Dtype::Int16: return get(int16_t());
    case Dtype::Int32: return get(int32_t());
    case Dtype::Int64: return double(get(int64_t()));
    case Dtype::Float16: return halfBitsToFloat(get(uint16_t()));
    case Dtype::BFloat16: return bfloat16BitsToFloat(get(uint16_t()));
    case Dtype::Float32: return get(float());
    case Dtype::Float64: return get(double());
    case Dtype::Complex64: return get(float());
  }
  return 0;
}

}  // namespace m2v::mlx
