// EXPECT-EXIT: 1
// EXPECT-MSG: error: "BLOCK was 64"
// EXPECT-LOC: 8:2
// -D values reach the preprocessor (checked through an #error that prints what was defined).
// ARGS: compile %s -D BLOCK=64
#include <metal_stdlib>
#if BLOCK == 64
#error "BLOCK was 64"
#endif
kernel void f(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) { out[i] = 1.0f; }
