// MODE: ir
// Rule (lower/WidenAccesses.cpp): an integer argument that scales an address (a row stride `ld` read from a
// `constant int&`) is one of the checked facts: the kernel loads it before anything else, ORs it with the buffer
// addresses and tests the low 4 bits once; on that path a row's four adjacent halves at a multiple of 4 are one
// <4 x half> load aligned to 8 bytes. The other path keeps the four 2-byte loads.
#include <metal_stdlib>
using namespace metal;
kernel void widen_integer_argument(device const half* m [[buffer(0)]], constant int& ld [[buffer(1)]],
                                   device float* out [[buffer(2)]], uint2 gid [[thread_position_in_grid]]) {
  device const half* row = m + gid.y * ld + 4 * gid.x;
  out[gid.y * 64 + gid.x] = float(row[0]) * float(row[1]) + float(row[2]) * float(row[3]);
}
// CHECK-LABEL: define void @main()
// CHECK-NEXT: widen.check:
// CHECK-DAG: %[[M:[0-9]+]] = {{(tail )?}}call i64 @m2v.push.i64(i32 16)
// CHECK-DAG: %[[LDP:[0-9]+]] = {{(tail )?}}call i64 @m2v.push.i64(i32 24)
// CHECK-DAG: %[[LDPTR:[0-9]+]] = inttoptr i64 %[[LDP]] to ptr addrspace(4)
// CHECK-DAG: %[[LD:[0-9]+]] = load i32, ptr addrspace(4) %[[LDPTR]]
// CHECK-DAG: zext i32 %[[LD]] to i64
// CHECK: and i64 %{{[0-9]+}}, 15
// CHECK: br i1
// CHECK-DAG: load <4 x half>, ptr addrspace(1) %{{.*}}, align 8
// CHECK-DAG: load half, ptr addrspace(1) %{{.*}}, align 2
