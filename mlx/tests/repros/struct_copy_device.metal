// metal2vk compiler limitation (found by the MLX front door; passes with the compiler of 2026-11-30 05:10): class-type values cannot be copied from or to
// device/constant/threadgroup memory. clang (C++ with address spaces) rejects the implicit copy constructor
// ("cannot bind reference in address space '1' to object in generic address space") and the implicit copy
// assignment ("'this' object is in address space '1', but method expects object in generic address space").
// MSL allows both; MLX kernels do it with complex64_t (and user structs in headers).
#include <metal_stdlib>
using namespace metal;
struct pair_f { float a, b; };
kernel void struct_copy(device const pair_f* in [[buffer(0)]], device pair_f* out [[buffer(1)]],
                        uint i [[thread_position_in_grid]]) {
  pair_f v = in[i];
  v.a += 1.0f;
  out[i] = v;
}
