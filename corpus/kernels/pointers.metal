// Pointer idioms from real kernels: reinterpreting casts between element types, pointer arithmetic on outputs,
// a table of buffer addresses read from memory (mixture-of-experts weight lookup), bit casts through uint pointers.
#include <metal_stdlib>
using namespace metal;

// Vectorized scale: the float buffers are read and written as float4 through casts; n4 = n / 4.
[[kernel]] void scale_vec4(const device float* x [[buffer(0)]], device float* y [[buffer(1)]],
                           constant float& s [[buffer(2)]], uint i [[thread_position_in_grid]]) {
  const device float4* x4 = (const device float4*)x;
  device float4* y4 = reinterpret_cast<device float4*>(y);
  y4[i] = x4[i] * s;
}

// Row-wise writes through a moving output pointer: out row r = [sum(x_r), max(x_r), x_r[0], x_r[n-1]].
[[kernel]] void row_stats_ptr(const device float* x [[buffer(0)]], device float* out [[buffer(1)]],
                              constant int& n [[buffer(2)]], uint r [[thread_position_in_grid]]) {
  const device float* p = x + r * n;
  const device float* end = p + n;
  device float* o = out + 4 * r;
  float s = 0, m = -INFINITY;
  for (const device float* q = p; q != end; ++q) {
    s += *q;
    m = max(m, *q);
  }
  *o++ = s;
  *o++ = m;
  *o++ = p[0];
  *o = *(end - 1);
}

// |x| by clearing the sign bit through a uint view of the same memory, in place.
[[kernel]] void abs_bits_inplace(device float* x [[buffer(0)]], uint i [[thread_position_in_grid]]) {
  device uint* u = (device uint*)x;
  u[i] &= 0x7fffffffu;
}

// half pairs packed in uint: swap the two halves of each word and convert through as_type.
[[kernel]] void half2_swap(const device uint* in [[buffer(0)]], device half* out [[buffer(1)]],
                           uint i [[thread_position_in_grid]]) {
  half2 h = as_type<half2>(in[i]);
  device half2* o = (device half2*)out;
  o[i] = half2(h.y, h.x);
}

// MoE: token t uses expert e = expert_ids[t]; each expert's [out, in] weight matrix is a separate buffer whose
// device address sits in `table` (as uint64). y[t, o] = W_e[o, :] . x[t, :]
[[kernel]] void moe_gemv_table(const device float* x [[buffer(0)]], const device uint64_t* table [[buffer(1)]],
                               const device uint* expert_ids [[buffer(2)]], device float* y [[buffer(3)]],
                               constant int2& dims [[buffer(4)]], uint2 pos [[thread_position_in_grid]]) {
  int in = dims.x, out = dims.y;
  uint o = pos.x, t = pos.y;
  const device float* W = (const device float*)table[expert_ids[t]];
  const device float* wr = W + o * in;
  float acc = 0;
  for (int i = 0; i < in; ++i) acc += wr[i] * x[t * in + i];
  y[t * out + o] = acc;
}

// The same lookup with the table typed as an array of device pointers.
[[kernel]] void moe_gemv_ptrs(const device float* x [[buffer(0)]], const device float* const device* table [[buffer(1)]],
                              const device uint* expert_ids [[buffer(2)]], device float* y [[buffer(3)]],
                              constant int2& dims [[buffer(4)]], uint2 pos [[thread_position_in_grid]]) {
  int in = dims.x, out = dims.y;
  uint o = pos.x, t = pos.y;
  const device float* wr = table[expert_ids[t]] + o * in;
  float acc = 0;
  for (int i = 0; i < in; ++i) acc += wr[i] * x[t * in + i];
  y[t * out + o] = acc;
}

// Pick one of two threadgroup arrays by a runtime condition (select of threadgroup pointers).
[[kernel]] void tg_select(const device float* a [[buffer(0)]], const device float* b [[buffer(1)]],
                          const device int* which [[buffer(2)]], device float* out [[buffer(3)]],
                          uint gid [[threadgroup_position_in_grid]], uint lid [[thread_position_in_threadgroup]]) {
  threadgroup float ta[64];
  threadgroup float tb[64];
  ta[lid] = a[gid * 64 + lid];
  tb[lid] = b[gid * 64 + lid];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  threadgroup float* src = which[gid] ? ta : tb;
  out[gid * 64 + lid] = src[63 - lid];
}
