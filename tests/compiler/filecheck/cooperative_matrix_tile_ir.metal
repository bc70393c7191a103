// MODE: ir
// Rule (lowered IR): a kernel that copies 16-byte vectors of half from device memory into a threadgroup tile and
// multiplies fragments of it. The copy, declared only 2-byte aligned, checks the device address and reads 16 bytes
// at once when it is aligned; the tile (16-byte aligned, offsets provably so) is written in 4-byte words. In the
// cooperative-matrix build each A fragment is one 4-byte load in the device's layout; B (its elements lie in two
// rows of a tile with a 16-byte row stride) is a cooperative-matrix load.
#include <metal_stdlib>
using namespace metal;
struct Vec8 { half v[8]; };
kernel void tile_mma(device const half* A [[buffer(0)]], device const half* B [[buffer(1)]],
                     device float* C [[buffer(2)]], ushort lane [[thread_index_in_simdgroup]]) {
  threadgroup half as[16 * 8], bs[8 * 8];
  for (ushort i = lane; i < 16; i += 32) *(threadgroup Vec8*)(as + 8 * i) = *(const device Vec8*)(A + 8 * i);
  if (lane < 8) *(threadgroup Vec8*)(bs + 8 * lane) = *(const device Vec8*)(B + 8 * lane);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  simdgroup_half8x8 a0, a1, b;
  simdgroup_float8x8 c0(0.0f), c1(0.0f);
  simdgroup_load(a0, as);
  simdgroup_load(a1, as + 64);
  simdgroup_load(b, bs);
  simdgroup_multiply_accumulate(c0, a0, b, c0);
  simdgroup_multiply_accumulate(c1, a1, b, c1);
  simdgroup_store(c0, C);
  simdgroup_store(c1, C + 64);
}
// CHECK: copy.aligned:
// CHECK: load <4 x i32>, ptr addrspace(1) {{.*}}, align 16
// CHECK: store i32 {{.*}}, ptr addrspace(3) {{.*}}, align 4
// CHECK-LABEL: ; cooperative-matrix build
// CHECK: load <2 x half>, ptr addrspace(3) {{.*}}, align 4
// CHECK: load <2 x half>, ptr addrspace(3) {{.*}}, align 4
// CHECK: call <2 x half> @m2v.coopmat.load_b.8x8.f16(ptr addrspace(3) {{.*}}, i32 16, i1 false)
// CHECK-NOT: call {{.*}}@m2v.sgm.to_nv
// CHECK: call <4 x float> @m2v.coopmat.muladd.16x8x8.f16
