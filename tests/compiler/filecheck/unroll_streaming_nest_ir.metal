// MODE: ir
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
