// MODE: ir
// Rule (lowered IR): the entry ABI pass replaces the kernel by `void @main()` that reads each buffer address from
// the push constants (m2v.push.i64 at offset 16 + 8*i), computes the built-ins from pseudo-calls, and fully
// inlines the Metal kernel and its helpers (no calls to user functions or __m2v:: intrinsics remain for this kernel).
#include <metal_stdlib>
using namespace metal;
static float helper(float x) { return x * 3.0f + 1.0f; }
kernel void entry_abi_ir(device const float* a [[buffer(0)]], device float* b [[buffer(1)]],
                         uint gid [[thread_position_in_grid]]) {
  b[gid] = helper(a[gid]);
}
// CHECK-LABEL: define void @main()
// CHECK-DAG: call <3 x i32> @m2v.builtin.workgroup_id()
// CHECK-DAG: call <3 x i32> @m2v.builtin.local_invocation_id()
// CHECK-DAG: call i64 @m2v.push.i64(i32 16)
// CHECK-DAG: call i64 @m2v.push.i64(i32 24)
// CHECK-NOT: call {{.*}}helper
// CHECK-NOT: call {{.*}}entry_abi_ir
// CHECK: ret void
// CHECK-NOT: define {{.*}}entry_abi_ir
