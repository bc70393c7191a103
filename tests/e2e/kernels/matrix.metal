// Metal's matrix types: constructors, column access, products with vectors and matrices, transpose, determinant.
// Checked by E2E.MatrixTypes against a column-major C++ reference.
#include <metal_stdlib>
using namespace metal;

kernel void matrix_ops(device const float4x4* ms [[buffer(0)]], device const float4* vs [[buffer(1)]],
                       device float4* mv [[buffer(2)]], device float4* vm [[buffer(3)]],
                       device float4* mm_col1 [[buffer(4)]], device float* dets [[buffer(5)]],
                       device half2* small [[buffer(6)]], uint i [[thread_position_in_grid]]) {
  float4x4 m = ms[i];
  float4 v = vs[i];
  mv[i] = m * v;                        // m's columns combined by v
  vm[i] = v * m;                        // one dot product per column
  float4x4 p = m * transpose(m) + float4x4(2.0f);  // plus twice the identity
  mm_col1[i] = p[1];
  dets[i] = determinant(m);
  half2x2 h(half2(1.0h, 2.0h), half2(3.0h, half(i % 7)));
  small[i] = h * half2(1.0h, -1.0h) + half2(determinant(h), 0.0h);
}
