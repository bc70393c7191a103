// Gather rows by index (embedding lookup), scatter-add with device atomics (atomic_float and atomic_int),
// and a histogram with threadgroup atomics merged into device atomics.
#include <metal_stdlib>
using namespace metal;

template <typename T, typename IdxT>
[[kernel]] void gather_rows(const device T* table [[buffer(0)]], const device IdxT* indices [[buffer(1)]],
                            device T* out [[buffer(2)]], constant int& dim [[buffer(3)]],
                            uint2 pos [[thread_position_in_grid]]) {
  IdxT r = indices[pos.y];
  out[size_t(pos.y) * dim + pos.x] = table[size_t(r) * dim + pos.x];
}

[[kernel]] void scatter_add_float(const device float* updates [[buffer(0)]], const device int* indices [[buffer(1)]],
                                  device atomic_float* out [[buffer(2)]], constant int& dim [[buffer(3)]],
                                  uint2 pos [[thread_position_in_grid]]) {
  int r = indices[pos.y];
  atomic_fetch_add_explicit(&out[r * dim + pos.x], updates[pos.y * dim + pos.x], memory_order_relaxed);
}

[[kernel]] void scatter_add_int(const device int* updates [[buffer(0)]], const device uint* indices [[buffer(1)]],
                                device atomic_int* out [[buffer(2)]], constant int& dim [[buffer(3)]],
                                uint2 pos [[thread_position_in_grid]]) {
  uint r = indices[pos.y];
  atomic_fetch_add_explicit(out + r * dim + pos.x, updates[pos.y * dim + pos.x], memory_order_relaxed);
}

[[kernel]] void histogram(const device uint* values [[buffer(0)]], device atomic_uint* bins [[buffer(1)]],
                          constant uint& n [[buffer(2)]], constant uint& nbins [[buffer(3)]],
                          uint gid [[thread_position_in_grid]], uint lid [[thread_position_in_threadgroup]],
                          uint tpg [[threads_per_threadgroup]]) {
  threadgroup atomic_uint local[64];
  for (uint b = lid; b < nbins; b += tpg) atomic_store_explicit(&local[b], 0u, memory_order_relaxed);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (gid < n) atomic_fetch_add_explicit(&local[values[gid] % nbins], 1u, memory_order_relaxed);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (uint b = lid; b < nbins; b += tpg) {
    uint c = atomic_load_explicit(&local[b], memory_order_relaxed);
    if (c) atomic_fetch_add_explicit(&bins[b], c, memory_order_relaxed);
  }
}

// atomic max on int: per-segment maximum.
[[kernel]] void segment_max_int(const device int* values [[buffer(0)]], const device uint* seg [[buffer(1)]],
                                device atomic_int* out [[buffer(2)]], uint i [[thread_position_in_grid]]) {
  atomic_fetch_max_explicit(&out[seg[i]], values[i], memory_order_relaxed);
}

template [[host_name("gather_rows_float_u32")]] [[kernel]] decltype(gather_rows<float, uint>) gather_rows<float, uint>;
template [[host_name("gather_rows_half_i64")]] [[kernel]] decltype(gather_rows<half, int64_t>) gather_rows<half, int64_t>;
template [[host_name("gather_rows_bfloat_i32")]] [[kernel]] decltype(gather_rows<bfloat, int>) gather_rows<bfloat, int>;
