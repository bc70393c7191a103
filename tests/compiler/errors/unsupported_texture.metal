// EXPECT-EXIT: 3
// EXPECT-MSG: unsupported: kernel parameter attribute [[texture]]
// EXPECT-LOC: 7:46
// A texture parameter: not supported yet (exit 3, naming the construct).
#include <metal_stdlib>
using namespace metal;
kernel void f(texture2d<float, access::read> tex [[texture(0)]], device float4* out [[buffer(0)]],
              uint2 gid [[thread_position_in_grid]]) {
  out[gid.x] = tex.read(gid);
}
