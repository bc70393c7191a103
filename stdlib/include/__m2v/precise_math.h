// metal2vk metal_stdlib: Metal's precise float math (the default; -ffast-math and metal::fast:: keep the GLSL.std.450
// instructions). Vulkan specifies GLSL.std.450's Sin/Cos only on [-pi, pi] with an absolute error of 2^-11, and
// Asin, Acos, Atan, Pow, the hyperbolic functions and Exp/Log (3 + 2|x| ulp) far from Metal's precise bounds of a
// few ulp over the whole range, so the precise functions are written here in float and 32-bit integer arithmetic
// only: no Float64 (many Vulkan devices lack it), no reliance on a fused Fma (Vulkan lets Fma be a multiply and an
// add), no division or square root taken as more than approximate (Vulkan allows 2.5 ulp and more; the results
// that need them exactly are corrected with error-free products).
//
// Every function takes and returns a float scalar. Error-free transformations (two_sum, two_prod) need every
// operation rounded on its own, so contraction into fused multiply-adds is off in this file.
#ifndef __M2V_PRECISE_MATH_H
#define __M2V_PRECISE_MATH_H

#pragma clang fp contract(off)

namespace __m2v {
namespace pm {
__M2V_F uint bits(float x) { return __builtin_bit_cast(uint, x); }
__M2V_F float from_bits(uint b) { return __builtin_bit_cast(float, b); }
__M2V_F float fabs_(float x) { return __builtin_elementwise_abs(x); }
__M2V_F float rint_(float x) { return __builtin_elementwise_roundeven(x); }
__M2V_F float copysign_(float x, float s) { return __builtin_elementwise_copysign(x, s); }
__M2V_F float inf_() { return __builtin_inff(); }
__M2V_F float nan_() { return __builtin_nanf(""); }
// 2^e for e in [-126, 127]
__M2V_F float pow2_(int e) { return from_bits(uint(e + 127) << 23); }
// p * 2^k for k in [-252, 254], rounded once (the first factor is exact)
__M2V_F float scale_(float p, int k) {
  int k1 = k / 2;
  return p * pow2_(k1) * pow2_(k - k1);
}

// ---- error-free transformations: a value hi + lo with |lo| <= ulp(hi) / 2 ----
struct ff {
  float hi, lo;
};
__M2V_F ff two_sum(float a, float b) {
  float s = a + b;
  float bb = s - a;
  return {s, (a - (s - bb)) + (b - bb)};
}
__M2V_F ff fast_two_sum(float a, float b) {  // |a| >= |b| (or a == 0)
  float s = a + b;
  return {s, b - (s - a)};
}
// Veltkamp's split into two 12-bit halves (|a| < 2^115)
__M2V_F ff split(float a) {
  float c = 4097.0f * a;
  float h = c - (c - a);
  return {h, a - h};
}
// Dekker's exact product (no fused multiply-add needed)
__M2V_F ff two_prod(float a, float b) {
  float p = a * b;
  ff x = split(a), y = split(b);
  return {p, ((x.hi * y.hi - p) + x.hi * y.lo + x.lo * y.hi) + x.lo * y.lo};
}
// a / b within about one ulp whatever the device's division (|a|, |b| in [2^-100, 2^100], or a == 0)
__M2V_F float div_(float a, float b) {
  float q = a / b;
  ff p = two_prod(q, b);
  return q + ((a - p.hi) - p.lo) / b;
}
// sqrt(z) within about one ulp, z in [2^-100, 2^100] (or 0)
__M2V_F float sqrt_(float z) {
  float s = __builtin_elementwise_sqrt(z);
  ff p = two_prod(s, s);
  float r = s + ((z - p.hi) - p.lo) * (0.5f / s);
  return z == 0.0f ? z : r;
}

// ---- trigonometric functions ----
// x = q pi/2 + r for |x| >= 2^12: Payne and Hanek's reduction with the bits of 2/pi, in 32-bit integers.
// 32 x 32 -> 64-bit product from 16-bit halves
__M2V_F void mul32(uint a, uint b, thread uint& hi, thread uint& lo) {
  uint al = a & 0xffffu, ah = a >> 16, bl = b & 0xffffu, bh = b >> 16;
  uint ll = al * bl, lh = al * bh, hl = ah * bl, hh = ah * bh;
  uint mid = (ll >> 16) + (lh & 0xffffu) + (hl & 0xffffu);
  hi = hh + (lh >> 16) + (hl >> 16) + (mid >> 16);
  lo = a * b;
}
// word i of 2/pi's bits preceded by one word of zeros: word 1 holds bits 2^-1 .. 2^-32
__M2V_F uint two_over_pi_word(int i) {
  return i == 1   ? 0xa2f9836eu
         : i == 2 ? 0x4e441529u
         : i == 3 ? 0xfc2757d1u
         : i == 4 ? 0xf534ddc0u
         : i == 5 ? 0xdb629599u
         : i == 6 ? 0x3c439041u
         : i == 7 ? 0xfe5163abu
                  : 0u;
}
// 32 bits of the table starting at bit n (bit 0 is the top bit of word 0)
__M2V_F uint two_over_pi_bits(int n) {
  int w = n >> 5, s = n & 31;
  uint a = two_over_pi_word(w), b = two_over_pi_word(w + 1);
  return s == 0 ? a : (a << s) | (b >> (32 - s));
}
__M2V_F int reduce_large(float x, thread float& hi, thread float& lo) {
  uint b = bits(x);
  uint m = (b & 0x7fffffu) | 0x800000u;  // |x| = m 2^e
  int e = int((b >> 23) & 0xffu) - 150;
  // x 2/pi mod 4 needs the bits of 2/pi from 2^-(e-1) on: m 2^e times bits of weight 2^-(e-2) and above is a
  // multiple of 4. 96 of them from there, times m, taken mod 2^96, are x 2/pi mod 4 in units of 2^-94.
  int n = e - 1 + 31;  // table bit of weight 2^-(e-1)
  uint v0 = two_over_pi_bits(n), v1 = two_over_pi_bits(n + 32), v2 = two_over_pi_bits(n + 64);
  uint h2, l2, h1, l1;
  mul32(m, v2, h2, l2);
  mul32(m, v1, h1, l1);
  uint p0 = l2;
  uint p1 = l1 + h2;
  uint p2 = m * v0 + h1 + (p1 < l1 ? 1u : 0u);
  // quadrant: the two integer bits, rounded to nearest by the first fraction bit
  int q = int(p2 >> 30);
  uint f2 = p2 & 0x3fffffffu, f1 = p1, f0 = p0;
  bool neg = (f2 & 0x20000000u) != 0;
  if (neg) {  // fraction 1 - f: negate the 94-bit value
    q += 1;
    f0 = ~f0 + 1u;
    uint c0 = f0 == 0u ? 1u : 0u;
    f1 = ~f1 + c0;
    uint c1 = (c0 != 0u && f1 == 0u) ? 1u : 0u;
    f2 = ((~f2) + c1) & 0x3fffffffu;
  }
  // normalise the 94-bit fraction (its top bit is 2^-1, placed at bit 93 of f2:f1:f0)
  int shift = 0;
  if (f2 == 0u) {
    f2 = f1;
    f1 = f0;
    f0 = 0u;
    shift += 32;
  }
  if (f2 == 0u) {
    f2 = f1;
    f1 = 0u;
    shift += 32;
  }
  int z = __builtin_clz(f2 | 1u);
  if (z > 0) {
    f2 = (f2 << z) | (f1 >> (32 - z));
    f1 = (f1 << z) | (f0 >> (32 - z));
  }
  shift += z;
  shift = shift > 80 ? 80 : shift;  // never reached: no float lies that close to a multiple of pi/2
  // value = (f2 2^64 + ...) 2^-(94 + shift): its top 48 bits as two exact floats
  float dh = float(f2 >> 8) * pow2_(-22 - shift);
  float dm = float(((f2 & 0xffu) << 16) | (f1 >> 16)) * pow2_(-46 - shift);
  // times pi/2
  ff p = two_prod(dh, 0x1.921fb6p+0f);
  ff r = fast_two_sum(p.hi, p.lo + (dh * -0x1.777a5cp-25f + dm * 0x1.921fb6p+0f));
  hi = neg ? -r.hi : r.hi;
  lo = neg ? -r.lo : r.lo;
  if (x < 0.0f) {
    hi = -hi;
    lo = -lo;
    q = -q;
  }
  return q;
}
// x = q pi/2 + (hi + lo) with |hi| <= about pi/4, for finite x
__M2V_F int reduce_trig(float x, thread float& hi, thread float& lo) {
  float ax = fabs_(x);
  if (ax <= 0x1.921fb6p-1f) {
    hi = x;
    lo = 0.0f;
    return 0;
  }
  if (ax < 0x1.0p12f) {
    // Cody and Waite: pi/2 = C1 + C2 + C3 + C4, C1..C3 of 12 bits, so k Ci is exact for k < 2^12
    float k = rint_(x * 0x1.45f306p-1f);
    float t = x - k * 0x1.92p+0f;  // exact (Sterbenz)
    ff s = two_sum(t, -(k * 0x1.fb4p-12f));
    ff u = two_sum(s.hi, -(k * 0x1.444p-24f));
    ff r = fast_two_sum(u.hi, (s.lo + u.lo) - k * 0x1.68c234p-39f);
    hi = r.hi;
    lo = r.lo;
    return int(k);
  }
  return reduce_large(x, hi, lo);
}
// sin and cos of hi + lo, |hi| <= pi/4 (a little more allowed)
__M2V_F float sin_kernel(float hi, float lo) {
  float z = hi * hi;
  float p = -0x1.555556p-3f + z * (0x1.11110ep-7f + z * (-0x1.a013a8p-13f + z * 0x1.6dbe08p-19f));
  return hi + (hi * z * p + lo);
}
__M2V_F float cos_kernel(float hi, float lo) {
  float z = hi * hi;
  float p =
      0x1.555556p-5f + z * (-0x1.6c16c2p-10f + z * (0x1.a01a00p-16f + z * (-0x1.27e260p-22f + z * 0x1.1c81c4p-29f)));
  float w = 0.5f * z;
  return (1.0f - w) + ((z * z * p - hi * lo) + ((1.0f - (1.0f - w)) - w));
}
// sin and cos of q pi/2 + r from sk = sin(r), ck = cos(r): quadrant q gives sin = sk, ck, -sk, -ck and
// cos = ck, -sk, -ck, sk
__M2V_F void in_quadrant(int q, float sk, float ck, thread float& s, thread float& c) {
  float so = (q & 1) ? ck : sk, co = (q & 1) ? sk : ck;
  s = (q & 2) ? -so : so;
  c = ((q + 1) & 2) ? -co : co;
}
__M2V_F void sincos_(float x, thread float& s, thread float& c) {
  if (!(fabs_(x) < inf_())) {
    s = c = x - x;  // NaN for inf and NaN
    return;
  }
  if (fabs_(x) < 0x1.0p-12f) {
    s = x;
    c = 1.0f;
    return;
  }
  float hi, lo;
  int q = reduce_trig(x, hi, lo);
  in_quadrant(q, sin_kernel(hi, lo), cos_kernel(hi, lo), s, c);
}
__M2V_F float sin_(float x) {
  float s, c;
  sincos_(x, s, c);
  return s;
}
__M2V_F float cos_(float x) {
  float s, c;
  sincos_(x, s, c);
  return c;
}
__M2V_F float tan_(float x) {
  if (!(fabs_(x) < inf_())) return x - x;
  if (fabs_(x) < 0x1.0p-12f) return x;
  float hi, lo;
  int q = reduce_trig(x, hi, lo);
  float sk = sin_kernel(hi, lo), ck = cos_kernel(hi, lo);
  // |sk| <= 0.71 <= ck: both quotients stay in range; the odd quadrants' -ck / sk is large but finite
  return (q & 1) ? -div_(ck, sk) : div_(sk, ck);
}

// ---- inverse trigonometric functions ----
// asin(s) for |s| <= 0.5 with z = s^2: s + s z A(z)
__M2V_F float asin_poly(float s, float z) {
  float p = 0x1.555556p-3f +
            z * (0x1.33331ep-4f +
                 z * (0x1.6dc0f0p-5f +
                      z * (0x1.efedf8p-6f + z * (0x1.82db24p-6f + z * (0x1.5a80a0p-7f + z * 0x1.fb7ca4p-6f)))));
  return s + s * z * p;
}
__M2V_F float asin_(float x) {
  float a = fabs_(x);
  if (!(a <= 1.0f)) return nan_();
  if (a < 0x1.0p-12f) return x;
  float r;
  if (a <= 0.5f) {
    r = asin_poly(a, a * a);
  } else {  // asin(a) = pi/2 - 2 asin(sqrt((1 - a) / 2))
    float z = 0.5f * (1.0f - a);
    float s = sqrt_(z);
    r = (0x1.921fb6p+0f - 2.0f * asin_poly(s, z)) + -0x1.777a5cp-25f;
  }
  return copysign_(r, x);
}
__M2V_F float acos_(float x) {
  float a = fabs_(x);
  if (!(a <= 1.0f)) return nan_();
  if (a <= 0.5f) return 0x1.921fb6p+0f - (asin_poly(x, x * x) - -0x1.777a5cp-25f);
  float z = 0.5f * (1.0f - a);
  float t = 2.0f * asin_poly(sqrt_(z), z);  // acos(a) = 2 asin(sqrt((1 - a) / 2))
  return x > 0.0f ? t : (0x1.921fb6p+1f - t) + -0x1.777a5cp-24f;
}
// atan(t) for t in [0, 1]
__M2V_F float atan_unit(float t) {
  float base_hi = 0.0f, base_lo = 0.0f;
  if (t > 0x1.a8279ap-2f) {  // tan(pi/8): atan(t) = pi/4 + atan((t - 1) / (t + 1))
    t = div_(t - 1.0f, t + 1.0f);
    base_hi = 0x1.921fb6p-1f;
    base_lo = -0x1.777a5cp-26f;
  }
  float z = t * t;
  float p = -0x1.555556p-2f +
            z * (0x1.99999ap-3f +
                 z * (-0x1.249240p-3f +
                      z * (0x1.c71964p-4f +
                           z * (-0x1.7415b6p-4f + z * (0x1.377e1cp-4f + z * (-0x1.edc1ccp-5f + z * 0x1.0dfb68p-5f))))));
  return base_hi + (t + (t * z * p + base_lo));
}
__M2V_F float atan_(float x) {
  float a = fabs_(x);
  if (a != a) return x;
  float r;
  if (a <= 1.0f) {
    r = atan_unit(a);
  } else {  // pi/2 - atan(1/a)
    float inv = a < 0x1.0p100f ? div_(1.0f, a) : 1.0f / a;
    r = (0x1.921fb6p+0f - atan_unit(inv)) + -0x1.777a5cp-25f;
  }
  return copysign_(r, x);
}
__M2V_F float atan2_(float y, float x) {
  if (x != x || y != y) return x + y;
  float ax = fabs_(x), ay = fabs_(y);
  bool swap = ay > ax;
  float num = swap ? ax : ay, den = swap ? ay : ax;
  if (den == inf_()) {  // inf/inf: pi/4; finite/inf: 0
    num = num == inf_() ? 1.0f : 0.0f;
    den = 1.0f;
  } else if (den == 0.0f) {
    den = 1.0f;
  } else {  // bring den into [1, 2): the quotient then needs no care about overflow
    int e = int((bits(den) >> 23) & 0xffu) - 127;
    e = e < -126 ? -126 : e > 126 ? 126 : e;
    float sc = pow2_(-e);
    num = num * sc;
    den = den * sc;
  }
  float t = atan_unit(num < 0x1.0p-100f ? num / den : div_(num, den));
  float r = swap ? (0x1.921fb6p+0f - t) + -0x1.777a5cp-25f : t;
  if (__builtin_signbit(x)) r = (0x1.921fb6p+1f - r) + -0x1.777a5cp-24f;
  return copysign_(r, y);
}

// ---- exponentials and logarithms ----
// exp(r) - 1 - r over r^2 for |r| <= ln2/2
__M2V_F float expm1_poly(float r) {
  float p =
      0x1.000000p-1f +
      r * (0x1.555556p-3f + r * (0x1.5554eap-5f + r * (0x1.1110e0p-7f + r * (0x1.6d4316p-10f + r * 0x1.a124e4p-13f))));
  return r + r * r * p;
}
__M2V_F float exp_(float x) {
  if (x != x) return x;
  if (x > 0x1.62e42ep+6f) return inf_();
  if (x < -0x1.9fe368p+6f) return 0.0f;
  float k = rint_(x * 0x1.715476p+0f);
  float r = (x - k * 0x1.62e4p-1f) - k * 0x1.7f7d1cp-20f;  // ln2 = C1 + C2, k C1 exact
  return scale_(1.0f + expm1_poly(r), int(k));
}
__M2V_F float exp2_(float x) {
  if (x != x) return x;
  if (x >= 128.0f) return inf_();
  if (x < -151.0f) return 0.0f;
  float k = rint_(x);
  float f = x - k;
  float p =
      0x1.62e430p-1f +
      f * (0x1.ebfbe0p-3f +
           f * (0x1.c6b08ep-5f +
                f * (0x1.3b2ab8p-7f +
                     f * (0x1.5d8776p-10f + f * (0x1.4308c8p-13f + f * (0x1.00c0e4p-16f + f * 0x1.63b2d8p-20f))))));
  return scale_(1.0f + f * p, int(k));
}
__M2V_F float exp10_(float x) {
  if (x != x) return x;
  if (x > 0x1.344136p+5f) return inf_();
  if (x < -0x1.686bfap+5f) return 0.0f;  // below half the smallest subnormal
  float k = rint_(x * 0x1.a934f0p+1f);
  float r = (x - k * 0x1.344p-2f) - k * 0x1.3509f8p-18f;  // log10(2) = C1 + C2
  float p = 0x1.26bb1cp+1f +
            r * (0x1.53524cp+1f +
                 r * (0x1.04705ap+1f +
                      r * (0x1.2bd760p+0f +
                           r * (0x1.142994p-1f + r * (0x1.a7ed0cp-3f + r * (0x1.17d372p-4f + r * 0x1.41f25ep-6f))))));
  return scale_(1.0f + r * p, int(k));
}
__M2V_F float expm1_(float x) {
  if (x != x) return x;
  if (x > 0x1.62e42ep+6f) return inf_();
  if (x < -17.5f) return -1.0f;
  if (fabs_(x) < 0x1.62e430p-2f) return fabs_(x) < 0x1.0p-25f ? x : expm1_poly(x);
  float k = rint_(x * 0x1.715476p+0f);
  float r = (x - k * 0x1.62e4p-1f) - k * 0x1.7f7d1cp-20f;
  float q = expm1_poly(r);
  int ki = int(k);
  if (ki > 60) return scale_(1.0f + q, ki);
  float two = pow2_(ki);  // 2^k (1 + q) - 1 = (2^k - 1) + 2^k q
  return (two - 1.0f) + two * q;
}
// x = 2^e (1 + f) with 1 + f in [sqrt(2)/2, sqrt(2)), for finite x > 0; the log of 1 + f is f - c with
// c = f^2/2 - s (f^2/2 + R), s = f / (2 + f), R = s^2 L(s^2)
__M2V_F int log_reduce(float x, thread float& f) {
  uint b = bits(x);
  int e = 0;
  if (b < 0x800000u) {  // subnormal
    b = bits(x * 0x1.0p25f);
    e = -25;
  }
  e += int(b >> 23) - 127;
  float m = from_bits((b & 0x7fffffu) | 0x3f800000u);
  if (m > 0x1.6a09e6p+0f) {
    m = m * 0.5f;
    e += 1;
  }
  f = m - 1.0f;  // exact
  return e;
}
__M2V_F float log_tail(float f, float s) {
  float z = s * s;
  float r = z * (0x1.555556p-1f + z * (0x1.9999ecp-2f + z * (0x1.245c44p-2f + z * 0x1.ddced8p-3f)));
  float hfsq = 0.5f * f * f;
  return hfsq - s * (hfsq + r);
}
// the special values of the logarithms: NaN for x < 0 and NaN, -inf at 0, inf at inf; 0 when x is ordinary
__M2V_F bool log_special(float x, thread float& r) {
  if (x != x || x < 0.0f) {
    r = nan_();
    return true;
  }
  if (x == 0.0f) {
    r = -inf_();
    return true;
  }
  if (x == inf_()) {
    r = x;
    return true;
  }
  return false;
}
__M2V_F float log_(float x) {
  float sp;
  if (log_special(x, sp)) return sp;
  float f;
  float e = float(log_reduce(x, f));
  float c = log_tail(f, f / (2.0f + f));
  return e * 0x1.62e4p-1f + (f - (c - e * 0x1.7f7d1cp-20f));
}
// log(1 + f) as hi + lo, |f| <= 0.42, with about 2^-30 relative error (for pow and log2)
__M2V_F ff log1p_ff(float f) {
  ff d = two_sum(2.0f, f);  // 2 + f
  float s = div_(f, d.hi);  // s = f / (2 + f) as s + sl
  ff sd = two_prod(s, d.hi);
  float sl = (((f - sd.hi) - sd.lo) - s * d.lo) / d.hi;
  float z = s * s;
  float r = z * (0x1.555556p-1f + z * (0x1.9999ecp-2f + z * (0x1.245c44p-2f + z * 0x1.ddced8p-3f)));
  ff h = two_prod(f, f);  // f^2 / 2, exact
  h.hi *= 0.5f;
  h.lo *= 0.5f;
  ff t = two_sum(h.hi, r);  // f^2/2 + R
  t.lo += h.lo;
  ff p = two_prod(s, t.hi);  // s (f^2/2 + R)
  p.lo += s * t.lo + sl * t.hi;
  ff c = two_sum(h.hi, -p.hi);  // c = f^2/2 - s (f^2/2 + R)
  c.lo += h.lo - p.lo;
  ff l = two_sum(f, -c.hi);
  return fast_two_sum(l.hi, l.lo - c.lo);
}
// log2(x) as hi + lo for finite x > 0
__M2V_F ff log2_ff(float x) {
  float f;
  float e = float(log_reduce(x, f));
  ff l = log1p_ff(f);
  ff p = two_prod(l.hi, 0x1.715476p+0f);  // times 1/ln2 = INV_LN2_HI + INV_LN2_LO
  p.lo += l.hi * 0x1.4ae0c0p-26f + l.lo * 0x1.715476p+0f;
  ff s = two_sum(e, p.hi);
  return fast_two_sum(s.hi, s.lo + p.lo);
}
__M2V_F float log2_(float x) {
  float sp;
  if (log_special(x, sp)) return sp;
  ff l = log2_ff(x);
  return l.hi + l.lo;
}
__M2V_F float log10_(float x) {
  float sp;
  if (log_special(x, sp)) return sp;
  float f;
  float e = float(log_reduce(x, f));
  ff l = log1p_ff(f);
  ff p = two_prod(l.hi, 0x1.bcb7b2p-2f);  // times 1/ln10
  p.lo += l.hi * -0x1.5b235ep-27f + l.lo * 0x1.bcb7b2p-2f;
  ff s = two_sum(e * 0x1.344p-2f, p.hi);  // e log10(2) = e C1 (exact) + e C2
  return s.hi + (s.lo + (p.lo + e * 0x1.3509f8p-18f));
}
// log(1 + y): log(u) for u = 1 + y rounded, corrected by the rounding error of u
__M2V_F float log1p_(float y) {
  if (y != y) return y;
  if (y < -1.0f) return nan_();
  if (y == -1.0f) return -inf_();
  if (y == inf_()) return y;
  if (fabs_(y) < 0x1.0p-24f) return y;
  if (y > -0x1.2bec34p-2f && y < 0x1.a827a0p-2f) {  // 1 + y in [sqrt(2)/2, sqrt(2)): f = y itself
    ff l = log1p_ff(y);
    return l.hi + l.lo;
  }
  float u = 1.0f + y;
  float c = y < 0x1.0p24f ? (y - (u - 1.0f)) / u : 0.0f;
  return log_(u) + c;
}
// 2^(hi + lo) for |hi| < 2^23
__M2V_F float exp2_ff(float hi, float lo) {
  if (hi != hi) return hi;
  if (hi > 128.0f || (hi == 128.0f && lo >= 0.0f)) return inf_();  // hi == 128, lo < 0: just below 2^128, finite
  if (hi < -151.0f) return 0.0f;
  float k = rint_(hi);
  float f = (hi - k) + lo;
  float p =
      0x1.62e430p-1f +
      f * (0x1.ebfbe0p-3f +
           f * (0x1.c6b08ep-5f +
                f * (0x1.3b2ab8p-7f +
                     f * (0x1.5d8776p-10f + f * (0x1.4308c8p-13f + f * (0x1.00c0e4p-16f + f * 0x1.63b2d8p-20f))))));
  return scale_(1.0f + f * p, int(k));
}
// x^y for finite x > 0 and finite y: 2^(y log2(x)) with log2(x) and the product carried as hi + lo
__M2V_F float powr_core(float x, float y) {
  ff l = log2_ff(x);
  if (fabs_(y) > 0x1.0p100f) return exp2_ff(y * l.hi, 0.0f);  // over- or underflows
  ff p = two_prod(y, l.hi);
  return exp2_ff(p.hi, p.lo + y * l.lo);
}

// ---- hyperbolic functions ----
__M2V_F float sinh_(float x) {
  float a = fabs_(x);
  if (a != a) return x;
  if (a < 0x1.0p-12f) return x;
  float r;
  if (a < 9.0f) {
    float em = expm1_(a);  // (e^a - e^-a) / 2 = (em + em / (em + 1)) / 2
    r = 0.5f * (em + div_(em, em + 1.0f));
  } else if (a < 0x1.62e42ep+6f) {
    r = 0.5f * exp_(a);
  } else {
    float h = exp_(0.5f * a);
    r = (0.5f * h) * h;
  }
  return copysign_(r, x);
}
__M2V_F float cosh_(float x) {
  float a = fabs_(x);
  if (a != a) return a;
  if (a < 9.0f) {
    float e = exp_(a);
    return 0.5f * e + div_(0.5f, e);
  }
  if (a < 0x1.62e42ep+6f) return 0.5f * exp_(a);
  float h = exp_(0.5f * a);
  return (0.5f * h) * h;
}
__M2V_F float tanh_(float x) {
  float a = fabs_(x);
  if (a != a) return x;
  if (a < 0x1.0p-12f) return x;
  float r;
  if (a < 0.55f) {
    float em = expm1_(2.0f * a);
    r = div_(em, em + 2.0f);
  } else if (a < 9.1f) {
    r = 1.0f - div_(2.0f, expm1_(2.0f * a) + 2.0f);
  } else {
    r = 1.0f;
  }
  return copysign_(r, x);
}
__M2V_F float asinh_(float x) {
  float a = fabs_(x);
  if (!(a < inf_())) return x;
  if (a < 0x1.0p-12f) return x;
  float r;
  if (a > 0x1.0p28f) {
    r = log_(a) + 0x1.62e430p-1f;
  } else if (a >= 2.0f) {
    r = log_(2.0f * a + div_(1.0f, sqrt_(a * a + 1.0f) + a));
  } else {
    float a2 = a * a;
    r = log1p_(a + div_(a2, 1.0f + sqrt_(1.0f + a2)));
  }
  return copysign_(r, x);
}
__M2V_F float acosh_(float x) {
  if (x != x) return x;
  if (x < 1.0f) return nan_();
  if (x == inf_()) return x;
  if (x > 0x1.0p28f) return log_(x) + 0x1.62e430p-1f;
  if (x > 2.0f) return log_(2.0f * x - div_(1.0f, x + sqrt_(x * x - 1.0f)));
  float t = x - 1.0f;  // exact
  return log1p_(t + sqrt_(2.0f * t + t * t));
}
__M2V_F float atanh_(float x) {
  float a = fabs_(x);
  if (a != a) return x;
  if (a > 1.0f) return nan_();
  if (a == 1.0f) return copysign_(inf_(), x);
  if (a < 0x1.0p-12f) return x;
  float r = a < 0.5f ? 0.5f * log1p_(2.0f * a + div_(2.0f * a * a, 1.0f - a)) : 0.5f * log1p_(div_(2.0f * a, 1.0f - a));
  return copysign_(r, x);
}

// ---- pow and powr (with C's and OpenCL's special values), sinpi and cospi ----
// |x|^y for x >= 0 (or NaN), y any: the special values of pow for a non-negative base
__M2V_F float pow_abs_(float ax, float y) {
  if (y == 0.0f || ax == 1.0f) return 1.0f;
  if (ax != ax || y != y) return ax + y;
  if (ax == 0.0f) return y > 0.0f ? 0.0f : inf_();
  if (ax == inf_()) return y > 0.0f ? inf_() : 0.0f;
  if (fabs_(y) == inf_()) return (ax > 1.0f) == (y > 0.0f) ? inf_() : 0.0f;
  return powr_core(ax, y);
}
__M2V_F float pow_(float x, float y) {
  if (y == 0.0f || x == 1.0f) return 1.0f;
  if (x != x || y != y) return x + y;
  float r = pow_abs_(fabs_(x), y);
  if (!__builtin_signbit(x) || fabs_(y) == inf_()) return r;
  // a negative base (or -0): integer exponents only (-0 and -inf take any), odd ones negate
  if (__builtin_elementwise_trunc(y) != y) return (x == 0.0f || x == -inf_()) ? r : nan_();
  bool odd = fabs_(y) < 0x1.0p24f && __builtin_elementwise_trunc(0.5f * y) != 0.5f * y;
  return odd ? -r : r;
}
__M2V_F float powr_(float x, float y) {
  if (x != x || y != y || x < 0.0f) return nan_();
  if (x == 0.0f && y == 0.0f) return nan_();
  if (x == inf_() && y == 0.0f) return nan_();
  if (x == 1.0f && fabs_(y) == inf_()) return nan_();
  return pow_abs_(x, y);
}
// sin(pi x) and cos(pi x): x = n/2 + t exactly, |t| <= 1/4, and pi t as hi + lo
__M2V_F void sincospi_(float x, thread float& s, thread float& c) {
  if (!(fabs_(x) < inf_())) {
    s = c = x - x;
    return;
  }
  float r = fabs_(x) < 0x1.0p24f ? x - 2.0f * rint_(0.5f * x) : 0.0f;  // in [-1, 1], exact
  float n = rint_(2.0f * r);
  float t = r - 0.5f * n;
  ff a = two_prod(t, 0x1.921fb6p+1f);
  ff th = fast_two_sum(a.hi, a.lo + t * -0x1.777a5cp-24f);
  in_quadrant(int(n), sin_kernel(th.hi, th.lo), cos_kernel(th.hi, th.lo), s, c);
  s = s == 0.0f ? copysign_(0.0f, x) : s;  // sinpi(n) = +-0 with the sign of n, cospi(n + 1/2) = +0
  c = c == 0.0f ? 0.0f : c;
}
__M2V_F float sinpi_(float x) {
  float s, c;
  sincospi_(x, s, c);
  return s;
}
__M2V_F float cospi_(float x) {
  float s, c;
  sincospi_(x, s, c);
  return c;
}
__M2V_F float tanpi_(float x) {
  float s, c;
  sincospi_(x, s, c);
  return c == 0.0f ? s / c : div_(s, c);
}
}  // namespace pm
}  // namespace __m2v

#pragma clang fp contract(on)
#endif
