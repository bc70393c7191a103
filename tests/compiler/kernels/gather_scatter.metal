// ENTRIES: embedding_gather scatter_add
// Embedding lookup (gather rows by token id, 64-bit offsets) and scatter-add with float atomics.
#include <metal_stdlib>
using namespace metal;

kernel void embedding_gather(device const half* table [[buffer(0)]], device const uint* tokens [[buffer(1)]],
                             device half* out [[buffer(2)]], constant uint& dim [[buffer(3)]],
                             uint2 pos [[thread_position_in_grid]]) {
  uint tok = tokens[pos.y];
  out[size_t(pos.y) * dim + pos.x] = table[size_t(tok) * dim + pos.x];
}

kernel void scatter_add(device const float* src [[buffer(0)]], device const int64_t* idx [[buffer(1)]],
                        device atomic_float* dst [[buffer(2)]], constant uint& inner [[buffer(3)]],
                        uint2 pos [[thread_position_in_grid]]) {
  int64_t row = idx[pos.y];
  if (row < 0) return;
  atomic_fetch_add_explicit(&dst[row * inner + pos.x], src[pos.y * inner + pos.x], memory_order_relaxed);
}
