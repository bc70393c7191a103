// MODE: ir
// Rule (lower/WidenAccesses.cpp): in `c[i + k] = a[i + k] + b[i + k]` for four k in turn, the loads of the next
// element may move above the store of this one only if `c` overlaps neither `a` nor `b`. The fast path checks that
// the written buffer's address is at least 64 bytes from each other buffer's (|c - a| >= 64, |c - b| >= 64; the
// offsets of the reordered accesses differ by a constant of at most 32 bytes, each access is at most 16), besides the
// 16-byte alignment of all three; then a, b and c are each one <4 x half> access. An output bound over an input
// (MLX's donated buffers) takes the kernel as written.
#include <metal_stdlib>
using namespace metal;
kernel void widen_distant_buffers(device const half* a [[buffer(0)]], device const half* b [[buffer(1)]],
                                  device half* c [[buffer(2)]], uint gid [[thread_position_in_grid]]) {
  uint i = 4 * gid;
  for (int k = 0; k < 4; ++k) c[i + k] = a[i + k] + b[i + k];
}
// CHECK-LABEL: define void @main()
// CHECK-NEXT: widen.check:
// CHECK-DAG: %[[A:[0-9]+]] = {{(tail )?}}call i64 @m2v.push.i64(i32 16)
// CHECK-DAG: %[[B:[0-9]+]] = {{(tail )?}}call i64 @m2v.push.i64(i32 24)
// CHECK-DAG: %[[C:[0-9]+]] = {{(tail )?}}call i64 @m2v.push.i64(i32 32)
// CHECK: and i64 %{{[0-9]+}}, 15
// CHECK: %[[D1:[0-9]+]] = sub i64 %{{[0-9]+}}, %{{[0-9]+}}
// CHECK: %[[S1:[0-9]+]] = add i64 %[[D1]], 63
// CHECK: icmp ugt i64 %[[S1]], 126
// CHECK: %[[D2:[0-9]+]] = sub i64 %{{[0-9]+}}, %{{[0-9]+}}
// CHECK: %[[S2:[0-9]+]] = add i64 %[[D2]], 63
// CHECK: icmp ugt i64 %[[S2]], 126
// CHECK-NOT: sub i64
// CHECK: br i1
// CHECK-DAG: load <4 x half>, ptr addrspace(1) %{{.*}}, align 8
// CHECK-DAG: store <4 x half> %{{.*}}, ptr addrspace(1) %{{.*}}, align 8
// CHECK-DAG: store half %{{.*}}, ptr addrspace(1) %{{.*}}, align 2
