// ENTRIES: reduce_sum_float reduce_sum_int reduce_max_float
// Full reductions: grid-stride loop, simd reduce, threadgroup staging, one atomic per threadgroup.
#include <metal_stdlib>
using namespace metal;

struct Sum { template <typename T> static T init() { return T(0); }
             template <typename T> static T simd(T v) { return simd_sum(v); }
             template <typename T> static T op(T a, T b) { return a + b; } };
struct Max { template <typename T> static T init() { return numeric_limits<T>::lowest(); }
             template <typename T> static T simd(T v) { return simd_max(v); }
             template <typename T> static T op(T a, T b) { return max(a, b); } };

template <typename T, typename Op, typename A>
[[kernel]] void reduce_all(device const T* in [[buffer(0)]], device A* out [[buffer(1)]], constant uint& n [[buffer(2)]],
                           uint gid [[thread_position_in_grid]], uint grid [[threads_per_grid]],
                           uint lane [[thread_index_in_simdgroup]], uint sg [[simdgroup_index_in_threadgroup]],
                           uint nsg [[simdgroups_per_threadgroup]]) {
  threadgroup T stage[32];
  T acc = Op::template init<T>();
  for (uint i = gid; i < n; i += grid) acc = Op::op(acc, in[i]);
  acc = Op::simd(acc);
  if (lane == 0) stage[sg] = acc;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (sg == 0) {
    acc = Op::simd(lane < nsg ? stage[lane] : Op::template init<T>());
    if (lane == 0) {
      if constexpr (is_same_v<Op, Sum>) atomic_fetch_add_explicit(out, acc, memory_order_relaxed);
      else atomic_fetch_max_explicit((device atomic_int*)out, as_type<int>(acc), memory_order_relaxed);
    }
  }
}
template [[host_name("reduce_sum_float")]] [[kernel]] decltype(reduce_all<float, Sum, atomic_float>) reduce_all<float, Sum, atomic_float>;
template [[host_name("reduce_sum_int")]] [[kernel]] decltype(reduce_all<int, Sum, atomic_int>) reduce_all<int, Sum, atomic_int>;
template [[host_name("reduce_max_float")]] [[kernel]] decltype(reduce_all<float, Max, atomic_int>) reduce_all<float, Max, atomic_int>;
