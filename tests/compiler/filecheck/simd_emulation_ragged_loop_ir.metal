// MODE: ir
// ARGS: --entry ragged
// Rule (lowered IR, lower/EmulateSimdgroups.cpp): a loop with a simdgroup function that threads leave at different
// times goes around, in the emulated body, until no thread of the workgroup is left in it: a new header runs the
// body for the threads still there (`alive`, Metal's active lanes), and a vote over the workgroup decides whether
// to go around again.
#include <metal_stdlib>
using namespace metal;
kernel void ragged(device const float* x [[buffer(0)]], device float* out [[buffer(1)]],
                   uint i [[thread_position_in_grid]]) {
  float acc = 0;
  for (uint k = 0; k < i % 7; ++k) acc += simd_sum(x[k]);
  out[i] = acc;
}
// CHECK: uniform.header:
// CHECK: %alive = phi i1
// CHECK: uniform.vote:
// CHECK: %any.alive = call i1 @m2v.emulated.workgroup_any(i1
// CHECK: br i1 %any.alive
// CHECK: call float @m2v.emulated.simd_reduce_add.{{.*}}(float {{%[0-9a-z.]+}}, i1 {{%[0-9a-z.]+}})
