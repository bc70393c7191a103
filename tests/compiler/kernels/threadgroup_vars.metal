// ENTRIES: threadgroup_vars
// Threadgroup variables declared in the kernel body: scalar, 1-D and 2-D arrays, a struct, several types; a tiled
// transpose through a padded 2-D tile.
#include <metal_stdlib>
using namespace metal;

struct Pair { float a; int b; };

kernel void threadgroup_vars(device const float* in [[buffer(0)]], device float* out [[buffer(1)]],
                             constant uint2& dims [[buffer(2)]],
                             uint2 gid [[thread_position_in_grid]], uint2 lid [[thread_position_in_threadgroup]],
                             uint2 tgid [[threadgroup_position_in_grid]], uint li [[thread_index_in_threadgroup]]) {
  threadgroup float tile[16][17];
  threadgroup half hbuf[256];
  threadgroup int counter;
  threadgroup Pair pairs[8];
  if (li == 0) counter = 0;
  if (li < 8) { pairs[li].a = float(li); pairs[li].b = int(li) * 2; }
  if (gid.x < dims.x && gid.y < dims.y) tile[lid.y][lid.x] = in[gid.y * dims.x + gid.x];
  hbuf[li & 255] = half(li);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  uint2 o = uint2(tgid.y * 16 + lid.x, tgid.x * 16 + lid.y);
  float v = tile[lid.x][lid.y] + float(hbuf[(li + 1) & 255]) + pairs[li & 7].a + float(pairs[li & 7].b) + float(counter);
  if (o.x < dims.y && o.y < dims.x) out[o.y * dims.y + o.x] = v;
}
