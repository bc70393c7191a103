// EXPECT-EXIT: 1
// EXPECT-MSG: error: expected expression
// EXPECT-LOC: 7:102
// A syntax error on a line whose [[buffer(0)]] and [[thread_position_in_grid]] the rewriter expands before clang
// sees it: the column must still be the original one.
#include <metal_stdlib>
kernel void f(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) { out[i] = 1.0f + ; }
