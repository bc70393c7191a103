// MODE: json
// Rule (lower/FindSpinWaits.cpp): a loop that leaves only when an atomic or volatile load of device memory returns a
// value another thread stores is listed in the reflection's spin_waits ("file:line" of the kernel's code); a
// compare-and-exchange retry loop, a counted loop that reads atomics and a wait on threadgroup memory are not.
#include <metal_stdlib>
using namespace metal;
// A decoupled look-back: threadgroup g waits for g - 1's flag.
kernel void look_back(device atomic_uint* flags [[buffer(0)]], device uint* out [[buffer(1)]],
                      uint g [[threadgroup_position_in_grid]], uint t [[thread_index_in_threadgroup]]) {
  if (t == 0) {
    if (g > 0)
      while (atomic_load_explicit(&flags[g - 1], memory_order_relaxed) == 0u) {}
    out[g] = g;
    atomic_store_explicit(&flags[g], 1u, memory_order_relaxed);
  }
}
kernel void volatile_flag(volatile device uint* flag [[buffer(0)]], device uint* out [[buffer(1)]],
                          uint i [[thread_position_in_grid]]) {
  uint spins = 0;
  while (flag[0] == 0u) ++spins;
  out[i] = spins;
}
kernel void cas_max(device atomic_uint* m [[buffer(0)]], device const uint* x [[buffer(1)]],
                    uint i [[thread_position_in_grid]]) {
  uint old = atomic_load_explicit(m, memory_order_relaxed);
  while (old < x[i] &&
         !atomic_compare_exchange_weak_explicit(m, &old, x[i], memory_order_relaxed, memory_order_relaxed)) {}
}
kernel void sum_counts(device atomic_uint* c [[buffer(0)]], device uint* out [[buffer(1)]],
                       constant uint& n [[buffer(2)]], uint i [[thread_position_in_grid]]) {
  uint s = 0;
  for (uint k = 0; k < n; ++k) s += atomic_load_explicit(&c[k], memory_order_relaxed);
  out[i] = s;
}
kernel void threadgroup_wait(device uint* out [[buffer(0)]], uint t [[thread_index_in_threadgroup]]) {
  threadgroup atomic_uint flag;
  if (t == 0) atomic_store_explicit(&flag, 1u, memory_order_relaxed);
  while (atomic_load_explicit(&flag, memory_order_relaxed) == 0u) {}
  out[t] = 1;
}
// CHECK: "entry": "look_back"
// CHECK: "spin_waits": [
// CHECK-NEXT: "spin_waits_json.metal:12"
// CHECK-NEXT: ]
// CHECK: "entry": "volatile_flag"
// CHECK: "spin_waits": [
// CHECK-NEXT: "spin_waits_json.metal:20"
// CHECK: "entry": "cas_max"
// CHECK-NOT: "spin_waits":
// CHECK: "entry": "sum_counts"
// CHECK-NOT: "spin_waits":
// CHECK: "entry": "threadgroup_wait"
// CHECK-NOT: "spin_waits":
// CHECK: "spirv_entry"
