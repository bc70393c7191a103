// MODE: asm
// Rule (spirv/Emitter.cpp baseOf): a threadgroup pointer advanced in a loop is a phi of its start and a GEP of the
// phi itself; the array behind it is the start's (here the [[threadgroup(0)]] argument's variable), so the pointer
// is a byte offset carried around the loop and each load an access chain into that variable.
#include <metal_stdlib>
using namespace metal;
kernel void tg_loop_pointer(device float* out [[buffer(0)]], constant uint& n [[buffer(1)]],
                            threadgroup float* shared [[threadgroup(0)]], uint t [[thread_index_in_threadgroup]]) {
  shared[t] = float(t);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  threadgroup const float* p = shared + t;
  float s = 0;
  for (uint k = 0; k < n; ++k) {
    s += *p;
    p += 4;
  }
  out[t] = s;
}
// CHECK: %[[VAR:m2v_threadgroup_0]] = OpVariable %{{[_A-Za-z0-9]+}} Workgroup
// CHECK: OpLoopMerge
// CHECK: %[[INDEX:[0-9]+]] = OpUDiv %uint %{{[0-9]+}} %uint_4
// CHECK-NEXT: %[[ELEM:[0-9]+]] = OpAccessChain %_ptr_Workgroup_float %[[VAR]] %[[INDEX]]
// CHECK-NEXT: OpLoad %float %[[ELEM]]
