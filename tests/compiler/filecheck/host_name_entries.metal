// MODE: json
// ARGS: --entry scale_half
// Rule: --entry selects one [[host_name]] instantiation; its reflection carries the host name and the
// instantiated Metal types.
#include <metal_stdlib>
using namespace metal;
template <typename T>
[[kernel]] void scale(device T* x [[buffer(0)]], uint i [[thread_position_in_grid]]) { x[i] = x[i] * T(2); }
#define instantiate(name, T) template [[host_name(name)]] [[kernel]] decltype(scale<T>) scale<T>;
instantiate("scale_float", float)
instantiate("scale_half", half)
// CHECK-NOT: "scale_float"
// CHECK: "entry": "scale_half"
// CHECK: "type": "device half*"
// CHECK-NOT: "scale_float"
