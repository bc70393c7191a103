// EXPECT-EXIT: 3
// EXPECT-MSG: error: unsupported: Metal 4 tensor views of memory (tensor, extents, dextents)
// EXPECT-LOC: 10:33
// A tensor view made inside a function template (as uzu's tensor_matmul.h makes one) is reported where the template
// names it, the first place in the user's code among the instantiation notes, not at the #include of the library.
#include <metal_stdlib>
using namespace metal;

template <class T> T first_of(device T* p) {
  using view = tensor<device T, extents<int, 4, 4>, tensor_inline>;
  return view(p, extents<int, 4, 4>{})[0];
}
kernel void f(device float* x [[buffer(0)]]) { x[1] = first_of(x); }
