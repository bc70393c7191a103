// EXPECT-EXIT: 1
// EXPECT-MSG: error: vector component access exceeds type 'uint2'
// EXPECT-LOC: 8:110
// A type error in a second kernel line after two attributes, inside a templated kernel instantiated through
// [[host_name]] (the location is still the template's source position).
#include <metal_stdlib>
using namespace metal;
template <typename T> kernel void g(device T* out [[buffer(0)]], uint2 i [[thread_position_in_grid]]) { out[i.w] = T(0); }
template [[host_name("g_float")]] kernel void g<float>(device float*, uint2);
