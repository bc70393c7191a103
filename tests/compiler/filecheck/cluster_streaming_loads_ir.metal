// MODE: ir
// Rule (lowered IR, lower/ClusterStreamingLoads.cpp): in an innermost loop that streams device memory, a trip's
// device loads come before the arithmetic on them (a thread stops at the first use of a load, not at the load), in
// their own order; a store stays where it is and no load moves across it.
#include <metal_stdlib>
using namespace metal;
kernel void rows(device const float* w [[buffer(0)]], device const float* x [[buffer(1)]],
                 device float* y [[buffer(2)]], device float* trace [[buffer(3)]], constant uint& n [[buffer(4)]],
                 uint gid [[thread_position_in_grid]]) {
  float a = 0.0f, b = 0.0f;
  for (uint i = 0; i < n; ++i) {
    float xi = x[i];
    a = fma(w[2 * gid * n + i], xi, a);
    b = fma(w[(2 * gid + 1) * n + i], xi, b);
  }
  y[gid] = a + b;
  for (uint i = 0; i < n; ++i) {
    float v = x[i] * 2.0f;
    trace[i] = v;
    y[gid] += w[i];
  }
}
// The first loop, unrolled by 2: its six loads, then the fmas.
// CHECK-LABEL: for.body.i.body:
// CHECK: load float, ptr addrspace(1)
// CHECK-NOT: @llvm.fma
// CHECK: load float, ptr addrspace(1)
// CHECK-NOT: @llvm.fma
// CHECK: load float, ptr addrspace(1)
// CHECK-NOT: @llvm.fma
// CHECK: load float, ptr addrspace(1)
// CHECK-NOT: @llvm.fma
// CHECK: load float, ptr addrspace(1)
// CHECK-NOT: @llvm.fma
// CHECK: load float, ptr addrspace(1)
// CHECK-NOT: @llvm.fma
// CHECK: call float @llvm.fma
// CHECK-NOT: load
// CHECK: br i1
// The second loop: the loads of w and y stay after the store to trace.
// CHECK-LABEL: for.body18.i.body:
// CHECK: load float, ptr addrspace(1)
// CHECK: store float {{.*}}, ptr addrspace(1)
// CHECK: load float, ptr addrspace(1)
// CHECK: ret void
