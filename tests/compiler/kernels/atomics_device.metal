// ENTRIES: atomics_device
// Device-memory atomics on atomic_int / atomic_uint / atomic_float: every fetch_ op, exchange, compare_exchange_weak,
// load/store.
#include <metal_stdlib>
using namespace metal;

kernel void atomics_device(device atomic_int* ai [[buffer(0)]], device atomic_uint* au [[buffer(1)]],
                           device atomic_float* af [[buffer(2)]], device const float* in [[buffer(3)]],
                           device int* old [[buffer(4)]], uint gid [[thread_position_in_grid]]) {
  int v = int(gid);
  int r = atomic_fetch_add_explicit(&ai[0], v, memory_order_relaxed);
  r += atomic_fetch_sub_explicit(&ai[1], v, memory_order_relaxed);
  r += atomic_fetch_min_explicit(&ai[2], v - 100, memory_order_relaxed);
  r += atomic_fetch_max_explicit(&ai[3], v, memory_order_relaxed);
  r += atomic_fetch_and_explicit(&ai[4], ~v, memory_order_relaxed);
  r += atomic_fetch_or_explicit(&ai[5], v, memory_order_relaxed);
  r += atomic_fetch_xor_explicit(&ai[6], v, memory_order_relaxed);
  r += atomic_exchange_explicit(&ai[7], v, memory_order_relaxed);
  uint u = atomic_fetch_add_explicit(&au[0], 1u, memory_order_relaxed);
  u += atomic_fetch_min_explicit(&au[1], gid, memory_order_relaxed) + atomic_fetch_max_explicit(&au[2], gid, memory_order_relaxed);
  atomic_fetch_add_explicit(&af[0], in[gid], memory_order_relaxed);
  float seen = atomic_load_explicit(&af[1], memory_order_relaxed);
  atomic_store_explicit(&af[2], seen + 1.0f, memory_order_relaxed);
  // float max through compare-exchange (a classic pattern before native float max)
  float cur = atomic_load_explicit(&af[3], memory_order_relaxed);
  while (cur < in[gid] && !atomic_compare_exchange_weak_explicit(&af[3], &cur, in[gid], memory_order_relaxed,
                                                                  memory_order_relaxed)) {
  }
  uint expected = 0;
  atomic_compare_exchange_weak_explicit(&au[3], &expected, gid + 1, memory_order_relaxed, memory_order_relaxed);
  atomic_store_explicit(&au[4], atomic_load_explicit(&au[5], memory_order_relaxed), memory_order_relaxed);
  old[gid] = r + int(u) + int(expected);
}
