// MODE: ir
// Rule (lowered IR, lower/UnrollStreamingLoops.cpp): an innermost loop that loads from device memory at addresses
// that change per iteration, with a trip count known only at run time and no convergent operation, runs two
// iterations per trip (one block: their loads are issued together), after a prologue of the odd iteration. A loop with a barrier keeps one iteration per trip (a remainder loop would run its barrier a
// different number of times in different threads).
#include <metal_stdlib>
using namespace metal;
kernel void stream_then_exchange(device const float* x [[buffer(0)]], device float* y [[buffer(1)]],
                                 constant uint& n [[buffer(2)]], threadgroup float* t [[threadgroup(0)]],
                                 uint gid [[thread_position_in_grid]], uint lid [[thread_position_in_threadgroup]]) {
  float acc = 0.0f;
  for (uint i = gid; i < n; i += 1024) acc += x[i];
  for (uint i = gid; i < n; i += 1024) {
    t[lid] = x[i];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    acc += t[lid ^ 1];
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  y[gid] = acc;
}
// The prologue's iteration:
// CHECK: load float, ptr addrspace(1) %arrayidx.i.prol,
// The unrolled loop: two loads in one block.
// CHECK: load float, ptr addrspace(1) %arrayidx.i,
// CHECK-NOT: br
// CHECK: load float, ptr addrspace(1) %arrayidx.i.1,
// CHECK-NOT: %arrayidx.i.2
// CHECK: br
// The loop with barriers: one iteration per trip.
// CHECK: call {{.*}}barrier
// CHECK-NOT: .prol
// CHECK-NOT: {{%[a-z0-9.]+}}.1 =
// CHECK: ret void
