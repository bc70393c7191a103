// MODE: json
// ARGS: --no-abort-checks
// Rule (CompileOptions::abortChecks, docs/ABI.md "Abort word"): with --no-abort-checks no loop reads an abort word,
// and the push block holds the grid and the buffer addresses only.
#include <metal_stdlib>
using namespace metal;
kernel void spin_unchecked(volatile device uint* gate [[buffer(0)]], device uint* counter [[buffer(1)]],
                           uint i [[thread_position_in_grid]]) {
  uint spins = 0u;
  while (gate[0] == 0u) counter[i] = ++spins;
}
// CHECK: "entry": "spin_unchecked"
// CHECK: "push_constants": {
// CHECK-NOT: abort_word_offset
// CHECK: "size": 32
