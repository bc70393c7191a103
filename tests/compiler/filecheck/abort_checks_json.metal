// MODE: json
// Rule (lower/AbortChecks.cpp, docs/ABI.md "Abort word"): a kernel with a loop whose trips have no small constant
// bound gets the abort word's address after its buffer addresses (push_constants.abort_word_offset, the block 8 bytes
// longer); a kernel whose loop nests are bounded by 4096 trips in all gets none.
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
// CHECK: "entry": "bounded_nest"
// CHECK: "push_constants": {
// CHECK-NOT: abort_word_offset
// CHECK: "size": 24
// CHECK: "entry": "runtime_trips"
// CHECK: "push_constants": {
// CHECK-NEXT: "abort_word_offset": 32,
// CHECK: "size": 40
