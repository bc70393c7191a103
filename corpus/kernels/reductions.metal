// Row and column reductions. "simd" variants reduce within 32-wide simdgroups (simd_sum/simd_max/shuffles) and
// combine simdgroup partials through threadgroup memory; "tree" variants use only threadgroup memory and barriers.
// One threadgroup per row; float accumulation for every input type.
#include <metal_stdlib>
using namespace metal;

template <typename T>
[[kernel]] void row_sum_simd(const device T* in [[buffer(0)]], device T* out [[buffer(1)]],
                             constant int& ncols [[buffer(2)]], uint gid [[threadgroup_position_in_grid]],
                             uint lid [[thread_position_in_threadgroup]], uint lsize [[threads_per_threadgroup]],
                             uint simd_lane_id [[thread_index_in_simdgroup]],
                             uint simd_group_id [[simdgroup_index_in_threadgroup]]) {
  threadgroup float shared[32];
  in += size_t(gid) * ncols;
  float acc = 0;
  for (int i = lid; i < ncols; i += lsize) acc += static_cast<float>(in[i]);
  acc = simd_sum(acc);
  if (simd_group_id == 0) shared[simd_lane_id] = 0;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (simd_lane_id == 0) shared[simd_group_id] = acc;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (simd_group_id == 0) {
    acc = simd_sum(shared[simd_lane_id]);
    if (simd_lane_id == 0) out[gid] = static_cast<T>(acc);
  }
}

template <typename T, int N>
[[kernel]] void row_sum_tree(const device T* in [[buffer(0)]], device T* out [[buffer(1)]],
                             constant int& ncols [[buffer(2)]], uint gid [[threadgroup_position_in_grid]],
                             uint lid [[thread_position_in_threadgroup]]) {
  threadgroup float buf[N];
  in += size_t(gid) * ncols;
  float acc = 0;
  for (int i = lid; i < ncols; i += N) acc += static_cast<float>(in[i]);
  buf[lid] = acc;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (uint s = N / 2; s > 0; s >>= 1) {
    if (lid < s) buf[lid] += buf[lid + s];
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  if (lid == 0) out[gid] = static_cast<T>(buf[0]);
}

[[kernel]] void row_max_simd(const device float* in [[buffer(0)]], device float* out [[buffer(1)]],
                             constant int& ncols [[buffer(2)]], uint gid [[threadgroup_position_in_grid]],
                             uint lid [[thread_position_in_threadgroup]], uint lsize [[threads_per_threadgroup]],
                             uint lane [[thread_index_in_simdgroup]], uint sg [[simdgroup_index_in_threadgroup]],
                             uint nsg [[simdgroups_per_threadgroup]]) {
  threadgroup float shared[32];
  in += size_t(gid) * ncols;
  float m = -INFINITY;
  for (int i = lid; i < ncols; i += lsize) m = max(m, in[i]);
  m = simd_max(m);
  if (lane == 0) shared[sg] = m;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  m = simd_max(lane < nsg ? shared[lane] : -INFINITY);
  if (lid == 0) out[gid] = m;
}

[[kernel]] void row_max_tree(const device float* in [[buffer(0)]], device float* out [[buffer(1)]],
                             constant int& ncols [[buffer(2)]], uint gid [[threadgroup_position_in_grid]],
                             uint lid [[thread_position_in_threadgroup]]) {
  threadgroup float buf[256];
  in += size_t(gid) * ncols;
  float m = -INFINITY;
  for (int i = lid; i < ncols; i += 256) m = fmax(m, in[i]);
  buf[lid] = m;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (uint s = 128; s > 0; s >>= 1) {
    if (lid < s) buf[lid] = fmax(buf[lid], buf[lid + s]);
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  if (lid == 0) out[gid] = buf[0];
}

// argmax: (value, index) pairs; ties go to the smaller index.
struct ArgMax {
  float v;
  uint i;
};
inline ArgMax better(ArgMax a, ArgMax b) { return (b.v > a.v || (b.v == a.v && b.i < a.i)) ? b : a; }

[[kernel]] void argmax_simd(const device float* in [[buffer(0)]], device uint* out [[buffer(1)]],
                            constant int& ncols [[buffer(2)]], uint gid [[threadgroup_position_in_grid]],
                            uint lid [[thread_position_in_threadgroup]], uint lsize [[threads_per_threadgroup]],
                            uint lane [[thread_index_in_simdgroup]], uint sg [[simdgroup_index_in_threadgroup]],
                            uint nsg [[simdgroups_per_threadgroup]]) {
  threadgroup ArgMax shared[32];
  in += size_t(gid) * ncols;
  ArgMax best{-INFINITY, 0xffffffffu};
  for (int i = lid; i < ncols; i += lsize) best = better(best, ArgMax{in[i], uint(i)});
  for (ushort d = 16; d > 0; d >>= 1) {
    ArgMax other{simd_shuffle_down(best.v, d), simd_shuffle_down(best.i, d)};
    best = better(best, other);
  }
  if (lane == 0) shared[sg] = best;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (sg == 0) {
    best = lane < nsg ? shared[lane] : ArgMax{-INFINITY, 0xffffffffu};
    for (ushort d = 16; d > 0; d >>= 1) {
      ArgMax other{simd_shuffle_down(best.v, d), simd_shuffle_down(best.i, d)};
      best = better(best, other);
    }
    if (lane == 0) out[gid] = best.i;
  }
}

[[kernel]] void argmax_tree(const device float* in [[buffer(0)]], device uint* out [[buffer(1)]],
                            constant int& ncols [[buffer(2)]], uint gid [[threadgroup_position_in_grid]],
                            uint lid [[thread_position_in_threadgroup]]) {
  threadgroup float vals[128];
  threadgroup uint idxs[128];
  in += size_t(gid) * ncols;
  ArgMax best{-INFINITY, 0xffffffffu};
  for (int i = lid; i < ncols; i += 128) best = better(best, ArgMax{in[i], uint(i)});
  vals[lid] = best.v;
  idxs[lid] = best.i;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (uint s = 64; s > 0; s >>= 1) {
    if (lid < s) {
      ArgMax r = better(ArgMax{vals[lid], idxs[lid]}, ArgMax{vals[lid + s], idxs[lid + s]});
      vals[lid] = r.v;
      idxs[lid] = r.i;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  if (lid == 0) out[gid] = idxs[0];
}

// logsumexp with the running-max trick, one pass per thread then a combine.
[[kernel]] void logsumexp_simd(const device float* in [[buffer(0)]], device float* out [[buffer(1)]],
                               constant int& ncols [[buffer(2)]], uint gid [[threadgroup_position_in_grid]],
                               uint lid [[thread_position_in_threadgroup]], uint lsize [[threads_per_threadgroup]],
                               uint lane [[thread_index_in_simdgroup]], uint sg [[simdgroup_index_in_threadgroup]],
                               uint nsg [[simdgroups_per_threadgroup]]) {
  threadgroup float smax[32], ssum[32];
  in += size_t(gid) * ncols;
  float m = -INFINITY, s = 0;
  for (int i = lid; i < ncols; i += lsize) {
    float x = in[i];
    float nm = max(m, x);
    s = s * exp(m - nm) + exp(x - nm);
    m = nm;
  }
  float gm = simd_max(m);
  s = simd_sum(s * exp(m - gm));
  if (lane == 0) { smax[sg] = gm; ssum[sg] = s; }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (sg == 0) {
    float pm = lane < nsg ? smax[lane] : -INFINITY;
    float ps = lane < nsg ? ssum[lane] : 0.0f;
    float tm = simd_max(pm);
    float ts = simd_sum(lane < nsg ? ps * exp(pm - tm) : 0.0f);
    if (lane == 0) out[gid] = tm + log(ts);
  }
}

[[kernel]] void logsumexp_tree(const device float* in [[buffer(0)]], device float* out [[buffer(1)]],
                               constant int& ncols [[buffer(2)]], uint gid [[threadgroup_position_in_grid]],
                               uint lid [[thread_position_in_threadgroup]]) {
  threadgroup float bm[64], bs[64];
  in += size_t(gid) * ncols;
  float m = -INFINITY;
  for (int i = lid; i < ncols; i += 64) m = max(m, in[i]);
  bm[lid] = m;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (uint s = 32; s > 0; s >>= 1) {
    if (lid < s) bm[lid] = max(bm[lid], bm[lid + s]);
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  float rowmax = bm[0];
  float acc = 0;
  for (int i = lid; i < ncols; i += 64) acc += exp(in[i] - rowmax);
  bs[lid] = acc;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (uint s = 32; s > 0; s >>= 1) {
    if (lid < s) bs[lid] += bs[lid + s];
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  if (lid == 0) out[gid] = rowmax + log(bs[0]);
}

// Column sums of a [rows, cols] matrix: one thread per column, coalesced across the threadgroup.
template <typename T>
[[kernel]] void col_sum(const device T* in [[buffer(0)]], device T* out [[buffer(1)]],
                        constant uint2& shape [[buffer(2)]], uint col [[thread_position_in_grid]]) {
  if (col >= shape.y) return;
  float acc = 0;
  for (uint r = 0; r < shape.x; ++r) acc += static_cast<float>(in[size_t(r) * shape.y + col]);
  out[col] = static_cast<T>(acc);
}

// Column reduction with a threadgroup of (32 columns x 8 row-slices) and a threadgroup combine.
[[kernel]] void col_sum_2d(const device float* in [[buffer(0)]], device float* out [[buffer(1)]],
                           constant uint2& shape [[buffer(2)]], uint2 tid [[thread_position_in_threadgroup]],
                           uint2 tgid [[threadgroup_position_in_grid]]) {
  threadgroup float part[8][32];
  uint col = tgid.x * 32 + tid.x;
  float acc = 0;
  if (col < shape.y)
    for (uint r = tid.y; r < shape.x; r += 8) acc += in[size_t(r) * shape.y + col];
  part[tid.y][tid.x] = acc;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (tid.y == 0 && col < shape.y) {
    float s = 0;
    for (int k = 0; k < 8; ++k) s += part[k][tid.x];
    out[col] = s;
  }
}

#define instantiate_reduce(tname, T)                                                                      \
  template [[host_name("row_sum_simd_" #tname)]] [[kernel]] decltype(row_sum_simd<T>) row_sum_simd<T>;    \
  template [[host_name("row_sum_tree_" #tname)]] [[kernel]] decltype(row_sum_tree<T, 128>) row_sum_tree<T, 128>; \
  template [[host_name("col_sum_" #tname)]] [[kernel]] decltype(col_sum<T>) col_sum<T>;

instantiate_reduce(float, float)
instantiate_reduce(half, half)
instantiate_reduce(bfloat, bfloat)

// Tree row-max with the scratch array passed as a [[threadgroup(0)]] argument sized by the host
// (setThreadgroupMemoryLength), threadgroup size chosen at dispatch.
[[kernel]] void row_max_dyn_tg(const device float* in [[buffer(0)]], device float* out [[buffer(1)]],
                               constant int& ncols [[buffer(2)]], threadgroup float* scratch [[threadgroup(0)]],
                               uint gid [[threadgroup_position_in_grid]], uint lid [[thread_position_in_threadgroup]],
                               uint tpg [[threads_per_threadgroup]]) {
  in += size_t(gid) * ncols;
  float m = -INFINITY;
  for (int i = lid; i < ncols; i += tpg) m = max(m, in[i]);
  scratch[lid] = m;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (uint s = tpg / 2; s > 0; s >>= 1) {
    if (lid < s) scratch[lid] = max(scratch[lid], scratch[lid + s]);
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  if (lid == 0) out[gid] = scratch[0];
}
