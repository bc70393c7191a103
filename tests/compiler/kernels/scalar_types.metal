// ENTRIES: scalar_types
// Every Metal scalar type: load, convert, arithmetic, store.
#include <metal_stdlib>
using namespace metal;

kernel void scalar_types(device const char* c [[buffer(0)]], device const uchar* uc [[buffer(1)]],
                         device const short* s [[buffer(2)]], device const ushort* us [[buffer(3)]],
                         device const int* i [[buffer(4)]], device const uint* u [[buffer(5)]],
                         device const long* l [[buffer(6)]], device const ulong* ul [[buffer(7)]],
                         device const half* h [[buffer(8)]], device const bfloat* bf [[buffer(9)]],
                         device float* out [[buffer(10)]], device bool* flags [[buffer(11)]],
                         uint gid [[thread_position_in_grid]]) {
  int8_t a = c[gid];
  uint8_t b = uc[gid];
  int16_t d = s[gid];
  uint16_t e = us[gid];
  int32_t f = i[gid];
  uint32_t g = u[gid];
  int64_t hh = l[gid];
  uint64_t k = ul[gid];
  size_t idx = size_t(gid);
  ptrdiff_t off = ptrdiff_t(idx) - 1;
  float acc = float(a) + float(b) + float(d) + float(e) + float(f) + float(g) + float(hh) + float(k);
  half hv = h[gid] * half(2.0h);
  bfloat bv = bf[gid] + bfloat(1.0f);
  acc += float(hv) + float(bv) + float(off);
  out[idx] = acc;
  bool neg = acc < 0.0f;
  flags[idx] = neg && (k != 0 || hh < 0);
}
