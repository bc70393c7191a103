// Metal spellings that C++ does not have, as real library code writes them (see frontend/MslRewriter.h), each
// checked for its value by tests/e2e/e2e_tests.cpp (E2E.Dialect*).
#include <metal_stdlib>
using namespace metal;

// A function constant declared through a storage macro that says constexpr (MLX's STEEL_CONST).
#define STORAGE static constant constexpr const
STORAGE bool negate_ [[function_constant(0)]];

// half <-> bfloat and vector conversions through template parameters convert values, never bits.
template <typename T, typename U>
[[kernel]] void convert(device const T* in [[buffer(0)]], device U* out [[buffer(1)]],
                        uint i [[thread_position_in_grid]]) {
  out[i] = static_cast<U>(in[i]);
}
template [[host_name("convert_half_bfloat")]] [[kernel]] decltype(convert<half, bfloat>) convert<half, bfloat>;
template [[host_name("convert_float4_half4")]] [[kernel]] decltype(convert<float4, half4>) convert<float4, half4>;

struct Pair {
  float a, b;
  // overloads on the address space of `this`: one body serves all
  constexpr Pair(float x, float y) thread : a(x), b(y) {}
  constexpr Pair(float x, float y) constant : a(x), b(y) {}
  constexpr Pair(float x, float y) device : a(x), b(y) {}
  float sum() const thread { return a + b; }
  float sum() const device { return a + b; }
  float sum() const constant { return a + b; }
};
constant Pair kFallback(100.0f, 20.0f);

uint weigh(uint3 p) { return p.x + 10 * p.y + 100 * p.z; }

kernel void dialect(device const Pair* pairs [[buffer(0)]], device float* out [[buffer(1)]],
                    device uint* weights [[buffer(2)]], device int* masks [[buffer(3)]],
                    uint i [[thread_position_in_grid]]) {
  // class operands in different address spaces meet in a conditional
  Pair p = (i % 3 == 0) ? kFallback : pairs[i];
  float s = p.sum() + pairs[i].sum() + kFallback.sum();
  out[i] = negate_ ? -s : s;
  // a braced list as a vector argument, and a vector initialized like a constructor call
  int2 offset(3, int(i));
  weights[i] = weigh({i, 2u, uint(offset.x)}) + uint(offset.y);
  // a bool vector written through a variable index
  bool4 m = bool4(false);
  for (int j = 0; j < 4; ++j) m[j] = ((i >> j) & 1) != 0;
  masks[i] = int(m[0]) + 2 * int(m[1]) + 4 * int(m[2]) + 8 * int(m[3]);
}

// 8 bytes of a private byte array read and written as one 8-byte value (MLX's quantized kernels: `(thread uint8_t*)&w`).
// (`count` is 8, from the host, so that the arrays stay arrays of bytes)
kernel void private_bytes_as_words(device const uint* in [[buffer(0)]], device uint2* words [[buffer(1)]],
                                   device uchar* bytes_out [[buffer(2)]], constant int& count [[buffer(3)]],
                                   uint i [[thread_position_in_grid]]) {
  uchar b[8];
  for (int k = 0; k < count; ++k) b[k] = uchar((in[i] >> (k % 4 * 8)) + k);
  words[i] = *(thread uint2*)b;
  uchar c[8];
  *(thread uint2*)c = uint2(in[i], ~in[i]);
  for (int k = 0; k < count; ++k) bytes_out[i * 8 + k] = c[k];
}

// Component names and swizzles of bool vectors (clang has none: the front end rewrites them on a second parse).
kernel void bool_swizzles(device const float4* in [[buffer(0)]], device int* out [[buffer(1)]],
                          uint i [[thread_position_in_grid]]) {
  bool4 b = in[i] > 0.0f;
  bool2 hi = b.zw;
  bool3 back = (in[i] < 1.0f).zyx;
  int v = int(b.x) + 2 * int(b.y) + 4 * int(hi.x) + 8 * int(hi.y);
  v += 16 * int(back.x) + 32 * int(back.z) + 64 * int(b.rg.y);
  out[i] = v;
}

// Metal's library as Metal 4 code (uzu) names it: integer_sequence / make_integer_sequence unrolling a loop through a
// fold expression, the atomic type under its own name _atomic<T>, and a threadgroup array parameter whose name an
// annotation macro follows (uzu's DSL writes `threadgroup float p OPTIONAL(cond)[N]`; outside its analysis build the
// macro expands to nothing).
#define DSL_NOTE(...)
template <class F, int... K> METAL_FUNC void for_each_index(F f, metal::integer_sequence<int, K...>) {
  (f(K), ...);
}
static_assert(metal::make_index_sequence<5>::size() == 5, "make_index_sequence<5> has five indices");
static void put(threadgroup float partial DSL_NOTE(cond && n > 32)[64], uint lid, float v) {
  partial[lid] = v;
}
kernel void library_names(device const float* x [[buffer(0)]], device float* sums [[buffer(1)]],
                          device uint* positives [[buffer(2)]], uint lid [[thread_position_in_threadgroup]],
                          uint i [[thread_position_in_grid]], uint group [[threadgroup_position_in_grid]]) {
  threadgroup float partial[64];
  threadgroup _atomic<uint> count;
  if (lid == 0) atomic_store_explicit(&count, 0u, memory_order_relaxed);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  float s = 0.0f;
  for_each_index([&](int k) { s += x[i * 4 + k] * float(k + 1); }, metal::make_integer_sequence<int, 4>{});
  put(partial, lid, s);
  if (s > 0.0f) atomic_fetch_add_explicit(&count, 1u, memory_order_relaxed);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  sums[i] = partial[lid ^ 1];
  if (lid == 0) positives[group] = atomic_load_explicit(&count, memory_order_relaxed);
}
