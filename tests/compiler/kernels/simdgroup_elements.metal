// ENTRIES: simdgroup_elements
// thread_elements(): read and write a lane's two elements; transpose load/store; simdgroup_multiply; bfloat tiles.
#include <metal_stdlib>
using namespace metal;

kernel void simdgroup_elements(device const float* A [[buffer(0)]], device float* out [[buffer(1)]],
                               device const bfloat* Bb [[buffer(2)]], device float* outb [[buffer(3)]],
                               uint lane [[thread_index_in_simdgroup]]) {
  simdgroup_float8x8 m;
  simdgroup_load(m, A, 8, ulong2(0, 0), true);
  auto e = m.thread_elements();
  m.thread_elements()[0] = e[0] * 2.0f;
  m.thread_elements()[1] = max(e[1], 0.0f);
  simdgroup_float8x8 p;
  simdgroup_multiply(p, m, m);
  simdgroup_store(p, out, 8);
  simdgroup_store(m, out + 64, 8, ulong2(0, 0), true);
  simdgroup_bfloat8x8 b;
  simdgroup_load(b, Bb, 8);
  simdgroup_float8x8 acc = make_filled_simdgroup_matrix<float, 8, 8>(1.0f);
  simdgroup_float8x8 bf;
  bf.thread_elements()[0] = float(b.thread_elements()[0]);
  bf.thread_elements()[1] = float(b.thread_elements()[1]);
  simdgroup_multiply_accumulate(acc, bf, m, acc);
  simdgroup_store(acc, outb, 8);
  out[128 + lane] = e[0] + e[1];
}
