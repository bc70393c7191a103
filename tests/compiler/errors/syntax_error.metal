// EXPECT-EXIT: 1
// EXPECT-MSG: error: expected ';'
// EXPECT-LOC: 9:28
// Malformed MSL: a missing semicolon; the column is after [[buffer(0)]] on the same line, so the rewriter's
// attribute expansion must be mapped back to the original column.
#include <metal_stdlib>
using namespace metal;
kernel void f(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
  device float* p = out + i  out[i] = 1.0f;
}
