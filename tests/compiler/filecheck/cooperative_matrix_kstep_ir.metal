// MODE: ir
// Rule (lowered IR, lower/CooperativeMatrix.cpp FuseKStepsPass and lower/FragmentLoads.cpp): in the cooperative
// build, two k steps whose second multiply accumulates onto the whole result of the first become one 16x8x16
// operation, and B fragments read from a threadgroup tile at a 16-byte-multiple stride from a 16-byte-aligned
// address are cooperative-matrix loads: row-major for a tile stored K x N, column-major for one stored N x K
// (loaded transposed). The portable build keeps neither.
#include <metal_stdlib>
using namespace metal;
kernel void kstep(device const half* A [[buffer(0)]], device const half* B [[buffer(1)]],
                  device float* C [[buffer(2)]], ushort lane [[thread_index_in_simdgroup]]) {
  threadgroup half bkn[16 * 8], bnk[8 * 16];
  for (ushort i = lane; i < 128; i += 32) {
    bkn[i] = B[i];
    bnk[i] = B[128 + i];
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  simdgroup_float8x8 top(0.0f), bottom(0.0f);
  simdgroup_half8x8 a0, a1, a2, a3, b0, b1;
  simdgroup_load(a0, A, 16);
  simdgroup_load(a1, A + 8, 16);
  simdgroup_load(a2, A + 128, 16);
  simdgroup_load(a3, A + 136, 16);
  // k 0..15 from the K x N tile
  simdgroup_load(b0, bkn);
  simdgroup_load(b1, bkn + 64);
  simdgroup_multiply_accumulate(top, a0, b0, top);
  simdgroup_multiply_accumulate(bottom, a2, b0, bottom);
  simdgroup_multiply_accumulate(top, a1, b1, top);
  simdgroup_multiply_accumulate(bottom, a3, b1, bottom);
  // k 0..15 again from the N x K tile, loaded transposed
  simdgroup_load(b0, bnk, 16, ulong2(0), true);
  simdgroup_load(b1, bnk + 8, 16, ulong2(0), true);
  simdgroup_multiply_accumulate(top, a0, b0, top);
  simdgroup_multiply_accumulate(bottom, a2, b0, bottom);
  simdgroup_multiply_accumulate(top, a1, b1, top);
  simdgroup_multiply_accumulate(bottom, a3, b1, bottom);
  simdgroup_store(top, C, 8);
  simdgroup_store(bottom, C + 64, 8);
}
// CHECK-NOT: m2v.coopmat
// CHECK-LABEL: ; cooperative-matrix build
// CHECK: call <2 x half> @m2v.coopmat.load_b.8x8.f16(ptr addrspace(3) {{.*}}, i32 16, i1 false)
// CHECK: call <2 x half> @m2v.coopmat.load_b.8x8.f16(ptr addrspace(3) {{.*}}, i32 16, i1 false)
// CHECK-NOT: call <4 x float> @m2v.coopmat.muladd.16x8x8.f16
// CHECK: call <4 x float> @m2v.coopmat.muladd.16x8x16.f16(<2 x half> %{{[^,]+}}, <2 x half> %{{[^,]+}}, <2 x half> %{{[^,]+}}, <2 x half> %{{[^,]+}}, <2 x half> %{{[^,]+}}, <2 x half> %{{[^,]+}}, <2 x float>
// CHECK: call <2 x half> @m2v.coopmat.load_b.8x8.f16(ptr addrspace(3) {{.*}}, i32 32, i1 true)
// CHECK: call <2 x half> @m2v.coopmat.load_b.8x8.f16(ptr addrspace(3) {{.*}}, i32 32, i1 true)
// CHECK-NOT: call <4 x float> @m2v.coopmat.muladd.16x8x8.f16
// CHECK: call <4 x float> @m2v.coopmat.muladd.16x8x16.f16
// CHECK-NOT: load half, ptr addrspace(3)
