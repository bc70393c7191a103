// MODE: ir
// ARGS: -j 1
// Rule (lowered IR, lower/UnrollStreamingLoops.cpp): a short inner loop (a constant trip count of at most 8) of a
// streaming loop (MLX's qmv: each thread's rows inside the k loop) is unrolled completely, and the loop around it,
// now innermost, runs two iterations per trip: four rows' loads, twice, in one block. (A hundred fma per row make the
// inner loop too large for LLVM's own complete unrolling at -O2.)
#include <metal_stdlib>
using namespace metal;
kernel void rows_dot(device const float* w [[buffer(0)]], device const float* x [[buffer(1)]],
                     device float* y [[buffer(2)]], constant int& k [[buffer(3)]],
                     uint gid [[thread_position_in_grid]]) {
  float acc[4] = {0, 0, 0, 0};
  for (int i = 0; i < k; i += 32) {
    float xi = x[i];
    for (int r = 0; r < 4; ++r) {
      float v = w[(4 * gid + r) * k + i];
#pragma unroll
      for (int t = 0; t < 100; ++t) v = fma(v, xi, float(t));
      acc[r] += v;
    }
  }
  for (int r = 0; r < 4; ++r) y[4 * gid + r] = acc[r];
}
// Not unrolled: a short inner loop with a barrier (it streams nothing this pass may touch), and a streaming loop
// the source marks `nounroll`.
kernel void rows_exchange(device const float* x [[buffer(0)]], device float* y [[buffer(1)]],
                          constant int& k [[buffer(2)]], threadgroup float* t [[threadgroup(0)]],
                          uint gid [[thread_position_in_grid]], uint lid [[thread_position_in_threadgroup]]) {
  float acc = 0;
  for (int i = 0; i < k; i += 32) {
    for (int r = 0; r < 4; ++r) {
      float v = x[i + r];
#pragma unroll
      for (int u = 0; u < 100; ++u) v = fma(v, v, float(u));
      t[lid] = v;
      threadgroup_barrier(mem_flags::mem_threadgroup);
      acc += t[lid ^ 1];
      threadgroup_barrier(mem_flags::mem_threadgroup);
    }
  }
#pragma nounroll
  for (int i = 0; i < k; i += 32) acc += x[i + gid];
  y[gid] = acc;
}
// The unrolled loop's block: x and four rows, then x and four rows of the next iteration, no branch between; the
// accumulators are registers (no thread-memory access).
// CHECK-NOT: alloca
// CHECK: {{^}}for.body.i.body:
// CHECK-NOT: br 
// CHECK: load float, ptr addrspace(1)
// CHECK-NOT: br 
// CHECK: load float, ptr addrspace(1)
// CHECK-NOT: br 
// CHECK: load float, ptr addrspace(1)
// CHECK-NOT: br 
// CHECK: load float, ptr addrspace(1)
// CHECK-NOT: br 
// CHECK: load float, ptr addrspace(1)
// CHECK-NOT: br 
// CHECK: load float, ptr addrspace(1)
// CHECK-NOT: br 
// CHECK: load float, ptr addrspace(1)
// CHECK-NOT: br 
// CHECK: load float, ptr addrspace(1)
// CHECK-NOT: br 
// CHECK: load float, ptr addrspace(1)
// CHECK-NOT: br 
// CHECK: load float, ptr addrspace(1)
// CHECK-NOT: load float, ptr addrspace(1)
// CHECK: br i1
// rows_exchange: the loop with barriers keeps its one load per trip, the `nounroll` loop its one load.
// CHECK: define void @main()
// CHECK: {{^}}for.body4.i.body:
// CHECK: load float, ptr addrspace(1)
// CHECK-NOT: load float, ptr addrspace(1)
// CHECK: br i1 {{.*}}label %for.body4.i
// CHECK: {{^}}for.body24.i.body:
// CHECK-NOT: load float, ptr addrspace(1) %arrayidx27.i.1
// CHECK: br i1 {{.*}}label %for.body24.i
