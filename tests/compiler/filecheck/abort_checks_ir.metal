// MODE: ir
// ARGS: --entry spin_on_flag
// Rule (lowered IR, lower/AbortChecks.cpp): a loop without a small constant trip bound counts its back edges in one
// per-thread counter, and at counts 1, 1025, 2049, ... loads the abort word (an atomic load through the push-constant
// address after the buffers, offset 32 here) and returns when it is not 0.
#include <metal_stdlib>
using namespace metal;
kernel void spin_on_flag(volatile device uint* gate [[buffer(0)]], device uint* counter [[buffer(1)]],
                         uint i [[thread_position_in_grid]]) {
  uint spins = 0u;
  while (gate[0] == 0u) counter[i] = ++spins;
}
// CHECK-LABEL: define void @main()
// CHECK: %abort.counter{{.*}} = phi i32
// CHECK: [[NEXT:%[0-9a-z.]+]] = add i32 %abort.counter{{.*}}, 1
// CHECK: [[MASKED:%[0-9]+]] = and i32 [[NEXT]], 1023
// CHECK: icmp eq i32 [[MASKED]], 1
// CHECK: abort.check:
// CHECK-NEXT: [[ADDRESS:%[0-9]+]] = call i64 @m2v.push.i64(i32 32)
// CHECK-NEXT: [[WORD:%[0-9]+]] = inttoptr i64 [[ADDRESS]] to ptr addrspace(1)
// CHECK-NEXT: load atomic i32, ptr addrspace(1) [[WORD]] monotonic, align 4
