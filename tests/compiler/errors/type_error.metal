// EXPECT-EXIT: 1
// EXPECT-MSG: error: cannot initialize a variable of type 'device float *'
// EXPECT-LOC: 8:17
// A type error: an int pointer assigned to a float pointer.
#include <metal_stdlib>
using namespace metal;
kernel void f(device int* a [[buffer(0)]], device float* b [[buffer(1)]], uint i [[thread_position_in_grid]]) {
  device float* p = a;
  p[i] = b[i];
}
