// MODE: ir
// Rule (lowered IR, lower/CooperativeMatrix.cpp): a kernel that multiplies half simdgroup matrices gets a second,
// cooperative-matrix build. The portable build has no matrix operation. In the cooperative build two fragments that
// share B fill one 16x8x8 operation (no zero half), the accumulators stay in the device's layout across the k loop
// (phi twins, no conversion inside the loop) and are converted to Apple's layout once, after it. Fragments loaded by
// simdgroup_load are loaded in the device's layout (addresses recomputed per lane): no permutation either.
#include <metal_stdlib>
using namespace metal;
kernel void gemm16(device const half* A [[buffer(0)]], device const half* B [[buffer(1)]],
                   device float* C [[buffer(2)]], constant uint& K [[buffer(3)]]) {
  simdgroup_float8x8 top(0.0f), bottom(0.0f);
  for (uint k = 0; k < K; k += 8) {
    simdgroup_half8x8 a0, a1, b;
    simdgroup_load(a0, A + k, K);
    simdgroup_load(a1, A + 8 * K + k, K);
    simdgroup_load(b, B + k * 8, 8);
    simdgroup_multiply_accumulate(top, a0, b, top);
    simdgroup_multiply_accumulate(bottom, a1, b, bottom);
  }
  simdgroup_store(top, C, 8);
  simdgroup_store(bottom, C + 64, 8);
}
// CHECK-NOT: m2v.coopmat
// CHECK-LABEL: ; cooperative-matrix build
// CHECK: .nv = phi <2 x float>
// CHECK: .nv = phi <2 x float>
// CHECK-NOT: m2v.sgm.to_apple
// CHECK-NOT: call {{.*}}@m2v.sgm.to_nv
// CHECK: call <4 x float> @m2v.coopmat.muladd.16x8x8.f16(<2 x half> %{{[^,]+}}, <2 x half> %{{[^,]+}}, <2 x half> %{{[^,]+}}, <2 x float> %{{[^,]+}}, <2 x float> %{{[^,]+}})
// CHECK-NOT: m2v.coopmat.muladd
// CHECK-NOT: m2v.sgm.to_apple
// CHECK: br i1
// CHECK: call <2 x float> @m2v.sgm.to_apple.v2f32
// CHECK: call <2 x float> @m2v.sgm.to_apple.v2f32
