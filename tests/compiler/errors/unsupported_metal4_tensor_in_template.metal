// EXPECT-EXIT: 3
// EXPECT-MSG: error: unsupported: Metal 4 tensors bound by the host (MTLTensor arguments)
// EXPECT-LOC: 10:12
// A host-bound tensor type completed inside a function template is reported where the template names it, the first
// place in the user's code among the instantiation notes, not at the #include of the library.
#include <metal_stdlib>
using namespace metal;

template <class T> T first_of(device T* p) {
  return T(sizeof(tensor<device T, dextents<int, 2>>)) + p[0];
}
kernel void f(device float* x [[buffer(0)]]) { x[1] = first_of(x); }
