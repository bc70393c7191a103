// EXPECT-EXIT: 1
// EXPECT-MSG: threadgroup index 31 of 't' is out of range: Metal allows [[threadgroup(0)]] to [[threadgroup(30)]]
// A [[threadgroup(n)]] index past Metal's 31 slots (its length would be specialization constant 131088 + n).
#include <metal_stdlib>
using namespace metal;
kernel void f(device float* out [[buffer(0)]], threadgroup float* t [[threadgroup(31)]],
              uint i [[thread_position_in_grid]]) { t[0] = 1.0f; out[i] = t[0]; }
