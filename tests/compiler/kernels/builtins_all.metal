// ENTRIES: builtins_all builtins_1d_ushort
// Every thread/threadgroup/grid/simdgroup/quadgroup built-in attribute, as uint3/uint2/uint/ushort.
#include <metal_stdlib>
using namespace metal;

kernel void builtins_all(device uint* out [[buffer(0)]],
                         uint3 tpig [[thread_position_in_grid]], uint3 tptg [[thread_position_in_threadgroup]],
                         uint3 tgpig [[threadgroup_position_in_grid]], uint3 tptg_n [[threads_per_threadgroup]],
                         uint3 tgpg [[threadgroups_per_grid]], uint3 tpg [[threads_per_grid]],
                         uint tiitg [[thread_index_in_threadgroup]], uint tiisg [[thread_index_in_simdgroup]],
                         uint sgitg [[simdgroup_index_in_threadgroup]], uint tpsg [[threads_per_simdgroup]],
                         uint sgptg [[simdgroups_per_threadgroup]], uint tew [[thread_execution_width]],
                         uint qgitg [[quadgroup_index_in_threadgroup]], uint tiiqg [[thread_index_in_quadgroup]],
                         uint qgptg [[quadgroups_per_threadgroup]], uint3 dtptg [[dispatch_threads_per_threadgroup]],
                         uint3 gorigin [[grid_origin]], uint3 gsize [[grid_size]]) {
  uint linear = (tpig.z * tpg.y + tpig.y) * tpg.x + tpig.x;
  device uint* o = out + linear * 20;
  o[0] = tptg.x + tptg.y + tptg.z;
  o[1] = tgpig.x + tgpig.y * 2 + tgpig.z * 3;
  o[2] = tptg_n.x * tptg_n.y * tptg_n.z;
  o[3] = tgpg.x * tgpg.y * tgpg.z;
  o[4] = tiitg;
  o[5] = tiisg;
  o[6] = sgitg;
  o[7] = tpsg;
  o[8] = sgptg;
  o[9] = tew;
  o[10] = qgitg;
  o[11] = tiiqg;
  o[12] = qgptg;
  o[13] = dtptg.x * dtptg.y * dtptg.z;
  o[14] = gorigin.x + gsize.x + gsize.y + gsize.z;
}

kernel void builtins_1d_ushort(device ushort* out [[buffer(0)]], ushort tid [[thread_position_in_grid]],
                               ushort2 lid [[thread_position_in_threadgroup]], ushort lane [[thread_index_in_simdgroup]],
                               ushort2 grid [[threads_per_grid]], ushort3 tg [[threadgroup_position_in_grid]],
                               uint2 grid32 [[threads_per_grid]], ushort tgx [[threadgroup_position_in_grid]]) {
  out[tid] = lid.x + lid.y + lane + grid.x + tg.y + ushort(grid32.x) + tgx;
}
