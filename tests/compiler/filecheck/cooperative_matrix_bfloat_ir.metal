// MODE: ir
// Rule (lowered IR, lower/CooperativeMatrix.cpp): bfloat multiplies get a cooperative-matrix build too. Pairs that
// share B, chained along k (16x8x16), that also share A become one 16x16x16 operation (FuseColumnBlocksPass), the
// device's one bfloat shape, returning one 16x8 result per column block; a multiply on its own stays a 16x8x8
// operation (the emitter pads it into 16x16x16). The portable build keeps subgroup shuffles.
#include <metal_stdlib>
using namespace metal;
kernel void block16(device const bfloat* A [[buffer(0)]], device const bfloat* B [[buffer(1)]],
                    device float* C [[buffer(2)]]) {
  simdgroup_float8x8 acc[2][2];
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int j = 0; j < 2; ++j) acc[i][j] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
#pragma unroll
  for (int k = 0; k < 16; k += 8) {
    simdgroup_bfloat8x8 a[2], b[2];
#pragma unroll
    for (int i = 0; i < 2; ++i) simdgroup_load(a[i], A + 8 * i * 16 + k, 16);
#pragma unroll
    for (int j = 0; j < 2; ++j) simdgroup_load(b[j], B + k * 16 + 8 * j, 16);
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
      for (int j = 0; j < 2; ++j) simdgroup_multiply_accumulate(acc[i][j], a[i], b[j], acc[i][j]);
  }
  simdgroup_bfloat8x8 x, y;
  simdgroup_float8x8 z;
  simdgroup_load(x, A + 256);
  simdgroup_load(y, B + 256);
  simdgroup_multiply(z, x, y);
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int j = 0; j < 2; ++j) simdgroup_store(acc[i][j], C + 8 * i * 16 + 8 * j, 16);
  simdgroup_store(z, C + 256);
}
// CHECK-NOT: m2v.coopmat
// CHECK-LABEL: ; cooperative-matrix build
// CHECK-NOT: call <4 x float> @m2v.coopmat.muladd.16x8x16.bf16
// CHECK: call { <4 x float>, <4 x float> } @m2v.coopmat.muladd.16x16x16.bf16(<2 x bfloat>
// CHECK-NOT: call {{.*}} @m2v.coopmat.muladd.16x16x16.bf16
// CHECK: call <4 x float> @m2v.coopmat.muladd.16x8x8.bf16(<2 x bfloat> %{{[^,]+}}, <2 x bfloat> zeroinitializer,
