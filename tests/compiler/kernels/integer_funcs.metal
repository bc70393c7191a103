// ENTRIES: integer_funcs
// Integer functions: clz, ctz, popcount, mulhi, rotate, extract_bits, insert_bits, reverse_bits, abs, absdiff,
// addsat, subsat, madsat, hadd, rhadd, min/max/clamp on ints, shifts and bitwise ops.
#include <metal_stdlib>
using namespace metal;

kernel void integer_funcs(device const uint* a [[buffer(0)]], device const int* b [[buffer(1)]],
                          device uint* out [[buffer(2)]], device int4* out4 [[buffer(3)]],
                          device ushort* sh [[buffer(4)]], uint gid [[thread_position_in_grid]]) {
  uint x = a[gid];
  int y = b[gid];
  uint r = clz(x) + ctz(x) + popcount(x) + mulhi(x, 0x9e3779b9u) + rotate(x, 7u) + extract_bits(x, 4u, 8u);
  r ^= insert_bits(x, 0xabu, 8u, 8u) + reverse_bits(x);
  r += uint(abs(y)) + absdiff(y, 3) + addsat(x, 0xfffffff0u) + subsat(x, 17u) + hadd(x, 5u) + rhadd(x, 9u);
  r += uint(madsat(y, 3, -1)) + min(x, 100u) + max(x, 3u) + clamp(x, 10u, 1000u) + uint(mulhi(y, -7));
  out[gid] = (r << 3) | (r >> 29);
  int4 v = int4(y, -y, y * 3, y >> 2);
  out4[gid] = abs(v) + clz(v) + popcount(v) + addsat(v, int4(INT_MAX)) + max(v, int4(0));
  ushort s = ushort(x);
  sh[gid] = popcount(s) + clz(s) + ctz(s) + rotate(s, ushort(3)) + reverse_bits(s);
}
