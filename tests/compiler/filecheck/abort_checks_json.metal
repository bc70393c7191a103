// MODE: json
// Rule (lower/AbortChecks.cpp, docs/ABI.md "Abort word"): a kernel with a loop whose trips have no small constant
// bound gets the abort word's address after its buffer addresses (push_constants.abort_word_offset, the block 8 bytes
// longer); a kernel whose loop nests are bounded by 4096 trips in all gets none, and so does one whose only unbounded
// loop nest has a barrier (lower/AbortChecks.cpp says why).
#include <metal_stdlib>
using namespace metal;
kernel void bounded_nest(device float* x [[buffer(0)]], uint i [[thread_position_in_grid]]) {
  float s = 0.0f;
  for (int a = 0; a < 64; ++a)
    for (int b = 0; b < 64; ++b) s += x[(i + a * 64 + b) & 1023] * float(b);
  x[i] = s;
}
kernel void runtime_trips(device float* x [[buffer(0)]], constant uint& n [[buffer(1)]],
                          uint i [[thread_position_in_grid]]) {
  float s = 0.0f;
  for (uint k = i; k < n; k += 64) s += x[k];
  x[i] = s;
}
kernel void barrier_loop(device float* x [[buffer(0)]], constant uint& n [[buffer(1)]],
                         uint t [[thread_index_in_threadgroup]]) {
  threadgroup float shared[64];
  float v = x[t];
  for (uint k = 0; k < n; ++k) {
    shared[t] = v;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    v += shared[(t + 1) % 64];
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  x[t] = v;
}
// CHECK: "entry": "bounded_nest"
// CHECK: "push_constants": {
// CHECK-NOT: abort_word_offset
// CHECK: "size": 24
// CHECK: "entry": "runtime_trips"
// CHECK: "push_constants": {
// CHECK-NEXT: "abort_word_offset": 32,
// CHECK: "size": 40
// CHECK: "entry": "barrier_loop"
// CHECK: "push_constants": {
// CHECK-NOT: abort_word_offset
// CHECK: "size": 32
