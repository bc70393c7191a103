// Dispatch geometry: each thread writes Metal's built-in values so the test can compare them with Metal's
// definitions, including partial edge threadgroups (dispatchThreads with a grid that is not a multiple of the
// threadgroup size).
#include <metal_stdlib>
using namespace metal;

// 1D: 8 uints per thread at out[gid * 8].
kernel void geom_1d(device uint* out [[buffer(0)]], uint gid [[thread_position_in_grid]],
                    uint tptg [[threads_per_threadgroup]], uint lid [[thread_position_in_threadgroup]],
                    uint tidx [[thread_index_in_threadgroup]], uint tpgrid [[threads_per_grid]],
                    uint dtptg [[dispatch_threads_per_threadgroup]], uint tgid [[threadgroup_position_in_grid]],
                    uint ntg [[threadgroups_per_grid]]) {
  device uint* o = out + gid * 8;
  o[0] = gid; o[1] = tptg; o[2] = lid; o[3] = tidx; o[4] = tpgrid; o[5] = dtptg; o[6] = tgid; o[7] = ntg;
}

// 2D: 12 uints per thread at out[(gid.y * grid.x + gid.x) * 12].
kernel void geom_2d(device uint* out [[buffer(0)]], uint2 gid [[thread_position_in_grid]],
                    uint2 tptg [[threads_per_threadgroup]], uint2 lid [[thread_position_in_threadgroup]],
                    uint tidx [[thread_index_in_threadgroup]], uint2 grid [[threads_per_grid]],
                    uint2 dtptg [[dispatch_threads_per_threadgroup]], uint2 tgid [[threadgroup_position_in_grid]]) {
  device uint* o = out + (gid.y * grid.x + gid.x) * 12;
  o[0] = gid.x; o[1] = gid.y; o[2] = tptg.x; o[3] = tptg.y; o[4] = lid.x; o[5] = lid.y;
  o[6] = tidx; o[7] = grid.x; o[8] = grid.y; o[9] = dtptg.x; o[10] = dtptg.y; o[11] = tgid.x + 1000 * tgid.y;
}

// 3D: 16 uints per thread.
kernel void geom_3d(device uint* out [[buffer(0)]], uint3 gid [[thread_position_in_grid]],
                    uint3 tptg [[threads_per_threadgroup]], uint3 lid [[thread_position_in_threadgroup]],
                    uint tidx [[thread_index_in_threadgroup]], uint3 grid [[grid_size]],
                    uint3 dtptg [[dispatch_threads_per_threadgroup]], uint3 ntg [[threadgroups_per_grid]]) {
  device uint* o = out + ((gid.z * grid.y + gid.y) * grid.x + gid.x) * 16;
  o[0] = gid.x; o[1] = gid.y; o[2] = gid.z; o[3] = tptg.x; o[4] = tptg.y; o[5] = tptg.z;
  o[6] = lid.x; o[7] = lid.y; o[8] = lid.z; o[9] = tidx; o[10] = grid.x; o[11] = grid.y; o[12] = grid.z;
  o[13] = dtptg.x * 10000 + dtptg.y * 100 + dtptg.z; o[14] = ntg.x * 10000 + ntg.y * 100 + ntg.z; o[15] = 7;
}
