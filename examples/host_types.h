// Host-side helpers shared by `m2v run`, `m2v examples`, the e2e tests and benchmarks: IEEE half and bfloat16
// conversions (round to nearest even), written without compiler extensions so they run anywhere.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace m2v::host {

inline uint32_t floatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float bitsFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

inline uint16_t floatToHalf(float f) {
  uint32_t x = floatBits(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t exp = (x >> 23) & 0xffu;
  uint32_t mant = x & 0x7fffffu;
  if (exp == 0xff) return uint16_t(sign | 0x7c00u | (mant ? 0x200u : 0u));  // inf / nan
  int e = int(exp) - 127 + 15;
  if (e >= 31) return uint16_t(sign | 0x7c00u);  // overflow -> inf
  if (e <= 0) {                                   // subnormal or zero
    if (e < -10) return uint16_t(sign);
    mant |= 0x800000u;
    uint32_t shift = uint32_t(14 - e);
    uint32_t half = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1u);
    uint32_t mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1u))) half++;
    return uint16_t(sign | half);
  }
  uint32_t half = (uint32_t(e) << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (half & 1u))) half++;  // may carry into the exponent: correct
  return uint16_t(sign | half);
}

inline float halfToFloat(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0) {
    if (mant == 0) return bitsFloat(sign);
    float v = std::ldexp(float(mant), -24);
    return sign ? -v : v;
  }
  if (exp == 31) return bitsFloat(sign | 0x7f800000u | (mant << 13));
  return bitsFloat(sign | ((exp - 15 + 127) << 23) | (mant << 13));
}

inline uint16_t floatToBfloat(float f) {
  uint32_t x = floatBits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return uint16_t((x >> 16) | 0x40u);  // quiet nan
  uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);
  return uint16_t((x + rounding) >> 16);
}
inline float bfloatToFloat(uint16_t b) { return bitsFloat(uint32_t(b) << 16); }

// Round a float through half / bfloat precision.
inline float roundHalf(float f) { return halfToFloat(floatToHalf(f)); }
inline float roundBfloat(float f) { return bfloatToFloat(floatToBfloat(f)); }

// One element of a buffer, by the short dtype names the tools use (f32 f16 bf16 i8 i16 i32 i64 u8 u16 u32 u64 bool),
// read or written as a double (floats by value, integers exactly up to 2^53), little-endian.
inline size_t dtypeSize(std::string_view t) {
  if (t == "f32" || t == "i32" || t == "u32") return 4;
  if (t == "f16" || t == "bf16" || t == "i16" || t == "u16") return 2;
  if (t == "i64" || t == "u64") return 8;
  return 1;
}

inline void storeElement(std::string_view t, double v, uint8_t* dst) {
  if (t == "f32") {
    float f = float(v);
    std::memcpy(dst, &f, 4);
  } else if (t == "f16" || t == "bf16") {
    uint16_t h = t == "f16" ? floatToHalf(float(v)) : floatToBfloat(float(v));
    std::memcpy(dst, &h, 2);
  } else if (t == "bool") {
    *dst = v != 0;
  } else if (t[0] == 'u' && v >= 0) {
    uint64_t u = uint64_t(v);
    std::memcpy(dst, &u, dtypeSize(t));
  } else {
    int64_t i = int64_t(v);
    std::memcpy(dst, &i, dtypeSize(t));  // two's complement, truncated to the element
  }
}

inline double loadElement(std::string_view t, const uint8_t* src) {
  if (t == "f32") {
    float f;
    std::memcpy(&f, src, 4);
    return f;
  }
  if (t == "f16" || t == "bf16") {
    uint16_t h;
    std::memcpy(&h, src, 2);
    return t == "f16" ? halfToFloat(h) : bfloatToFloat(h);
  }
  size_t n = dtypeSize(t);
  if (t[0] == 'i') {
    int64_t i = 0;
    std::memcpy(&i, src, n);
    int shift = int(64 - 8 * n);
    return double(int64_t(uint64_t(i) << shift) >> shift);
  }
  uint64_t u = 0;
  std::memcpy(&u, src, n);
  return double(u);
}

}  // namespace m2v::host
