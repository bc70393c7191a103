// Post-rewrite test kernels: metal_integer (and integer abs/min/max/clamp) for all integer widths, scalars and vectors.
#include <metal_stdlib>
using namespace metal;

template <class T> T all_int(T x, T y) {
  T r = abs(x) + absdiff(x, y) + addsat(x, y) + subsat(x, y) + clamp(x, y, x) + clz(x) + ctz(x) + popcount(x) +
        mad24(x, y, x) + mul24(x, y) + madhi(x, y, x) + madsat(x, y, x) + mulhi(x, y) + max(x, y) + min(x, y) +
        max3(x, y, x) + min3(x, y, x) + median3(x, y, x) + rotate(x, y) + reverse_bits(x) + hadd(x, y) + rhadd(x, y);
  return r + extract_bits(x, 3u, 5u) + insert_bits(x, y, 4u, 7u);
}

#define KERNEL __attribute__((annotate("m2v.kernel")))
#define BUF(n) __attribute__((annotate("m2v.buffer", n)))
#define GID __attribute__((annotate("m2v.builtin", "thread_position_in_grid")))
#define INT_KERNEL(T)                                                                              \
  KERNEL void int_##T(device T *out BUF(0), const device T *in BUF(1), uint gid GID) {             \
    out[gid] = all_int(in[gid], in[gid + 1]);                                                      \
  }
INT_KERNEL(char) INT_KERNEL(uchar) INT_KERNEL(short) INT_KERNEL(ushort) INT_KERNEL(int) INT_KERNEL(uint)
INT_KERNEL(long) INT_KERNEL(ulong) INT_KERNEL(int2) INT_KERNEL(uint3) INT_KERNEL(short4) INT_KERNEL(uchar4)
INT_KERNEL(long2) INT_KERNEL(ulong4)

KERNEL void int_mixed(device uint *o BUF(0), constant int &n BUF(1), uint gid GID) {
  o[gid] = min(gid, 32u) + max(n, 0) + clamp(gid, 0u, uint(n)) + extract_bits(gid, 0, 8);
}
