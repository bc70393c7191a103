// MODE: ir
// Rule (lower/WidenAccesses.cpp): a pointer that advances around a loop by a constant step (`p += 64`) keeps the
// alignment of its start when the step is a multiple of it, so the adjacent ushort loads through it in each
// iteration become one <4 x i16> load on the checked path (known bits alone do not follow a pointer phi).
#include <metal_stdlib>
using namespace metal;
kernel void widen_loop_pointer(device const uint8_t* w [[buffer(0)]], constant int& k [[buffer(1)]],
                               device uint* out [[buffer(2)]], uint gid [[thread_position_in_grid]]) {
  device const uint8_t* p = w + gid * 8;
  uint acc = 0;
  for (int i = 0; i < k; i += 64) {
    device const uint16_t* q = (device const uint16_t*)p;
    acc += q[0] ^ (q[1] << 1) ^ (q[2] << 2) ^ (q[3] << 3);
    p += 64;
  }
  out[gid] = acc;
}
// CHECK-LABEL: define void @main()
// CHECK-NEXT: widen.check:
// CHECK: and i64 %{{[0-9]+}}, 15
// CHECK-DAG: load <4 x i16>, ptr addrspace(1) %{{.*}}, align 8
// CHECK-DAG: load i16, ptr addrspace(1) %{{.*}}, align 2
