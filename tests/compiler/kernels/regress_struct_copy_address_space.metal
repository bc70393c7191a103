// ENTRIES: k
#include <metal_stdlib>
using namespace metal;
struct S { float x,y,z; int n; };
kernel void k(device const S* in [[buffer(0)]], device S* out [[buffer(1)]], constant S& c [[buffer(2)]], uint gid [[thread_position_in_grid]]) {
  S t = in[gid];
  t.x += c.y;
  out[gid] = t;
  S u = c;
  out[gid+1] = u;
}
