// metal2vk compiler bug (found by the MLX front door; passes with the compiler of 2026-11-30 05:10): a constant, non-zero index into a threadgroup array
// fails with "unsupported: constant expression in generated code" (a constant GEP into the addrspace(3) global).
// Index 0 works. Real kernels hit it through unrolled tree reductions (`if (tid < 1) p[0] += p[1]`).
#include <metal_stdlib>
using namespace metal;
kernel void tg_const_index(device const float* x [[buffer(0)]], device float* out [[buffer(1)]],
                           uint tid [[thread_position_in_threadgroup]]) {
  threadgroup float partial[32];
  partial[tid] = x[tid];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  out[tid] = partial[1];
}
