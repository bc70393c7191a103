// ENTRIES: pointer_table
// A table of buffer device addresses read from memory (gather from many tensors), pointer selects between two
// buffers, and a pointer phi through a loop.
#include <metal_stdlib>
using namespace metal;

struct TensorRef {
  device const float* data;
  uint size;
  uint pad;
};

kernel void pointer_table(device const TensorRef* tensors [[buffer(0)]], device const ulong* raw_ptrs [[buffer(1)]],
                          device float* out [[buffer(2)]], device float* alt [[buffer(3)]],
                          constant uint& count [[buffer(4)]], uint gid [[thread_position_in_grid]]) {
  float acc = 0.0f;
  for (uint t = 0; t < count; ++t) {
    device const float* p = tensors[t].data;
    uint n = tensors[t].size;
    acc += p[gid % n];
  }
  device const float* q = (device const float*)raw_ptrs[gid & 1];
  acc += q[gid];
  device float* dst = (gid & 1) ? out : alt;
  dst[gid] = acc;
  device float* walk = out;
  for (uint i = 0; i < (gid & 3); ++i) walk += 16;
  walk[gid & 15] += 1.0f;
}
