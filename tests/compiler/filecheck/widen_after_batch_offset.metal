// MODE: ir
// Rule (lower/WidenAccesses.cpp, versionAfter): when an address is computed from values the kernel's entry cannot
// check -- a batch offset chosen by a function constant, one path summing strides read at run-time indices, and a
// row stride read from a params struct after an early return -- the kernel is versioned where those values are
// known: after the barrier, the threadgroup-uniform base `a + offset + tid.y * ld` is tested once (low 4 bits), and
// on that path the row's four adjacent halves at 4 * lane are one <4 x half> load aligned to 8 bytes. The other path
// keeps the four 2-byte loads; what precedes the check is not copied.
#include <metal_stdlib>
using namespace metal;
struct Params {
  int m;
  int ld;
  long batch_stride;
  int ndim;
};
constant bool has_batch [[function_constant(10)]];
kernel void widen_after_batch_offset(device const half* a [[buffer(0)]], device float* out [[buffer(1)]],
                                     constant Params* p [[buffer(2)]], constant long* strides [[buffer(3)]],
                                     uint3 tid [[threadgroup_position_in_grid]],
                                     uint lane [[thread_index_in_simdgroup]]) {
  if (int(tid.y) >= p->m) return;
  if (has_batch) {
    long offset = 0;
    uint z = tid.z;
    for (int i = p->ndim - 1; i >= 0; --i) {
      offset += long(z % 2) * strides[i];
      z /= 2;
    }
    a += offset;
  } else {
    a += p->batch_stride * tid.z;
  }
  threadgroup_barrier(mem_flags::mem_none);
  device const half* row = a + tid.y * p->ld + 4 * lane;
  float s = float(row[0]) * float(row[1]) + float(row[2]) * float(row[3]);
  out[(tid.z * p->m + tid.y) * 32 + lane] = simd_sum(s);
}
// CHECK-LABEL: define void @main()
// CHECK-NOT: widen.check
// CHECK: call void @_ZN5__m2v19threadgroup_barrierEj
// CHECK: %[[BASE:add.ptr[0-9.a-z]*]] = getelementptr inbounds nuw half, ptr addrspace(1) %a.addr
// CHECK-NEXT: %[[I:[0-9]+]] = ptrtoint ptr addrspace(1) %[[BASE]] to i64
// CHECK-NEXT: %[[L:[0-9]+]] = and i64 %[[I]], 15
// CHECK-NEXT: %widen.aligned = icmp ne i64 %[[L]], 0
// CHECK-NEXT: br i1 %widen.aligned, label %widen.region, label
// CHECK: widen.region:
// CHECK-COUNT-4: load half, ptr addrspace(1) %{{.*}}, align 2
// CHECK: widen.region.fast:
// CHECK-NOT: load half
// CHECK: load <4 x half>, ptr addrspace(1) %{{.*}}, align 8
// CHECK-NOT: threadgroup_barrier
// CHECK: store float
