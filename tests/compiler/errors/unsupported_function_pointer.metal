// EXPECT-EXIT: 3
// EXPECT-MSG: error: unsupported:
// EXPECT-MSG: as a value
// EXPECT-LOC: 13:17
// A call through a function pointer chosen at run time: unsupported (exit 3).
#include <metal_stdlib>
using namespace metal;
float twice(float x) { return 2.0f * x; }
float square(float x) { return x * x; }
typedef float (*unary_fn)(float);
kernel void f(device float* out [[buffer(0)]], device const int* sel [[buffer(1)]],
              uint i [[thread_position_in_grid]]) {
  unary_fn fn = sel[i] ? twice : square;
  out[i] = fn(out[i]);
}
