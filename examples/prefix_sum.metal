// Inclusive prefix sum of ints in two levels. scan_blocks scans each threadgroup's block in threadgroup memory
// (Hillis-Steele, barriers only) and writes the block total; the totals are scanned with the same kernel; then
// add_block_offsets adds the scanned total of the previous blocks to every element.
#include <metal_stdlib>
using namespace metal;

kernel void scan_blocks(device const int* in [[buffer(0)]], device int* out [[buffer(1)]],
                        device int* block_sums [[buffer(2)]], constant uint& n [[buffer(3)]],
                        uint gid [[thread_position_in_grid]], uint tid [[thread_index_in_threadgroup]],
                        uint tpg [[threads_per_threadgroup]], uint group [[threadgroup_position_in_grid]]) {
  threadgroup int buf[1024];
  buf[tid] = gid < n ? in[gid] : 0;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (uint offset = 1; offset < tpg; offset <<= 1) {
    int add = tid >= offset ? buf[tid - offset] : 0;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    buf[tid] += add;
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  if (gid < n) out[gid] = buf[tid];
  if (tid == tpg - 1) block_sums[group] = buf[tid];
}

kernel void add_block_offsets(device int* data [[buffer(0)]], device const int* scanned_sums [[buffer(1)]],
                              constant uint& n [[buffer(2)]], uint gid [[thread_position_in_grid]],
                              uint group [[threadgroup_position_in_grid]]) {
  if (gid < n && group > 0) data[gid] += scanned_sums[group - 1];
}
