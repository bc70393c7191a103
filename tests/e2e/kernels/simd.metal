// SIMD-group (32 lanes) and quad-group functions. On devices without 32-wide subgroups the runtime refuses these.
#include <metal_stdlib>
using namespace metal;

// Per simdgroup: sum, max and the lane-0 broadcast; every lane writes.
kernel void simd_reduce(device const float* x [[buffer(0)]], device float* sum [[buffer(1)]],
                        device float* mx [[buffer(2)]], device float* first [[buffer(3)]],
                        uint gid [[thread_position_in_grid]]) {
  float v = x[gid];
  sum[gid] = simd_sum(v);
  mx[gid] = simd_max(v);
  first[gid] = simd_broadcast(v, 0);
}

// Inclusive and exclusive prefix sums within each simdgroup (ints, exact).
kernel void simd_prefix(device const int* x [[buffer(0)]], device int* incl [[buffer(1)]],
                        device int* excl [[buffer(2)]], uint gid [[thread_position_in_grid]]) {
  int v = x[gid];
  incl[gid] = simd_prefix_inclusive_sum(v);
  excl[gid] = simd_prefix_exclusive_sum(v);
}

// Shuffles: xor 5, down 3 (lanes past the end keep their own value), and an arbitrary index.
kernel void simd_shuffles(device const float* x [[buffer(0)]], device float* xr [[buffer(1)]],
                          device float* dn [[buffer(2)]], device float* idx [[buffer(3)]],
                          uint gid [[thread_position_in_grid]], uint lane [[thread_index_in_simdgroup]]) {
  float v = x[gid];
  xr[gid] = simd_shuffle_xor(v, 5);
  dn[gid] = simd_shuffle_down(v, 3);
  idx[gid] = simd_shuffle(v, ushort((lane * 7) % 32));
}

// Quad functions: sum over the 4 lanes of the quad and a swap of neighbours.
kernel void quad_ops(device const float* x [[buffer(0)]], device float* qs [[buffer(1)]],
                     device float* qx [[buffer(2)]], uint gid [[thread_position_in_grid]]) {
  float v = x[gid];
  qs[gid] = quad_sum(v);
  qx[gid] = quad_shuffle_xor(v, 1);
}

// Early return in the partial last group, then simd functions among the live threads: sum over live lanes of
// each simdgroup and the simdgroup's lane count.
kernel void simd_partial(device const float* x [[buffer(0)]], device float* out [[buffer(1)]],
                         device uint* lanes [[buffer(2)]], constant uint& n [[buffer(3)]],
                         uint gid [[thread_position_in_grid]]) {
  if (gid >= n) return;
  out[gid] = simd_sum(x[gid]);
  lanes[gid] = simd_sum(1u);
}

// Built-ins: simdgroup index, lane, simdgroups per threadgroup, threads per simdgroup, quad lane.
kernel void simd_builtins(device uint* out [[buffer(0)]], uint gid [[thread_position_in_grid]],
                          uint sg [[simdgroup_index_in_threadgroup]], uint lane [[thread_index_in_simdgroup]],
                          uint nsg [[simdgroups_per_threadgroup]], uint w [[threads_per_simdgroup]],
                          uint qlane [[thread_index_in_quadgroup]]) {
  device uint* o = out + gid * 5;
  o[0] = sg; o[1] = lane; o[2] = nsg; o[3] = w; o[4] = qlane;
}

// C = A * B for one 8x8 f32 tile per simdgroup (one threadgroup = one simdgroup of 32 threads per tile).
kernel void simdgroup_gemm8(device const float* A [[buffer(0)]], device const float* B [[buffer(1)]],
                            device float* C [[buffer(2)]], constant uint& K [[buffer(3)]],
                            uint tile [[threadgroup_position_in_grid]]) {
  // A: 8 x K, B: K x 8, per tile offset; C: 8 x 8 per tile.
  simdgroup_float8x8 acc = simdgroup_float8x8(0);
  simdgroup_float8x8 a, b;
  for (uint k = 0; k < K; k += 8) {
    simdgroup_load(a, A + tile * 8 * K + k, K);
    simdgroup_load(b, B + tile * K * 8 + k * 8, 8);
    simdgroup_multiply_accumulate(acc, a, b, acc);
  }
  simdgroup_store(acc, C + tile * 64, 8);
}

// Simd functions under control flow that differs between lanes: lanes below `cut` sum among themselves, the others
// take the maximum among themselves; every lane then asks whether any lane of its side saw a value above 0.5.
kernel void simd_divergent(device const float* x [[buffer(0)]], device float* out [[buffer(1)]],
                           device uint* any [[buffer(2)]], constant uint& cut [[buffer(3)]],
                           uint gid [[thread_position_in_grid]], uint lane [[thread_index_in_simdgroup]]) {
  float v = x[gid];
  if (lane < cut) {
    out[gid] = simd_sum(v);
    any[gid] = simd_any(v > 0.5f) ? 1u : 0u;
  } else {
    out[gid] = simd_max(v);
    any[gid] = simd_any(v > 0.5f) ? 1u : 0u;
  }
}

// A threadgroup reduction as MLX writes one, `rounds` times in a loop: simd_sum per simdgroup, lane 0 publishes,
// a barrier, then simdgroup 0 alone sums the partials with simd_sum again.
kernel void simd_rounds(device const float* x [[buffer(0)]], device float* out [[buffer(1)]],
                        constant uint& rounds [[buffer(2)]], uint gid [[thread_position_in_grid]],
                        uint tgid [[threadgroup_position_in_grid]], uint lid [[thread_index_in_threadgroup]],
                        uint sg [[simdgroup_index_in_threadgroup]], uint lane [[thread_index_in_simdgroup]],
                        uint groups [[simdgroups_per_threadgroup]]) {
  threadgroup float partial[32];
  float acc = 0;
  for (uint r = 0; r < rounds; ++r) {
    float s = simd_sum(x[gid * rounds + r]);
    if (lane == 0) partial[sg] = s;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (sg == 0) acc += simd_sum(lane < groups ? partial[lane] : 0.0f);
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  if (lid == 0) out[tgid] = acc;
}

// An early return before a loop of shuffles, as MLX's arg_reduce has: the threads that left still run the loop's
// exchanges (inactive), the loop's trip count being the same for every thread; lane 0 records each step.
kernel void simd_return_then_loop(device const float* x [[buffer(0)]], device float* out [[buffer(1)]],
                                  device float* steps [[buffer(2)]], uint gid [[thread_position_in_grid]],
                                  uint lane [[thread_index_in_simdgroup]]) {
  float best = x[gid];
  if ((gid / 32) % 2 == 1) return;  // odd simdgroups leave
  uint step = 0;
  for (uint offset = 16; offset > 0; offset /= 2, ++step) {
    float other = simd_shuffle_down(best, offset);
    if (lane + offset < 32) best = max(best, other);
    if (lane == 0) steps[gid / 32 * 5 + step] = best;
  }
  if (lane == 0) out[gid / 32] = best;
}

// A simdgroup function in a loop whose trip count differs between threads, as in MLX's qmv (rows left per
// simdgroup): each round's active lanes are the threads still in the loop.
kernel void simd_ragged_loop(device const float* x [[buffer(0)]], device float* out [[buffer(1)]],
                             uint gid [[thread_position_in_grid]], uint lane [[thread_index_in_simdgroup]],
                             uint sg [[simdgroup_index_in_threadgroup]]) {
  uint rounds = sg % 3 + (lane % 5 == 0 ? 1 : 0);
  float acc = 0;
  for (uint r = 0; r < rounds; ++r) acc += simd_sum(x[gid * 4 + r]);
  out[gid] = acc;
}
