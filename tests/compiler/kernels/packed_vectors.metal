// ENTRIES: packed_vectors
// packed_float3 / packed_half4 in buffers: tight layout (12/8-byte strides), element access by member and index,
// conversion to the vector type in thread memory.
// (Whole-object copies to and from device memory are covered by regress_packed_vector_device_copy.metal.)
#include <metal_stdlib>
using namespace metal;

struct Vertex {
  packed_float3 position;
  packed_half2 uv;
  float weight;
};

kernel void packed_vectors(device const packed_float3* pos [[buffer(0)]], device packed_float3* outp [[buffer(1)]],
                           device const Vertex* verts [[buffer(2)]], device float4* outv [[buffer(3)]],
                           device packed_half4* ph [[buffer(4)]], uint gid [[thread_position_in_grid]]) {
  packed_float3 t(pos[gid].x, pos[gid].y, pos[gid].z);
  float3 p = t;
  p = p * 2.0f + float3(1.0f);
  outp[gid].x = p.x;
  outp[gid].y = p.y;
  outp[gid].z = p.z;
  float3 vp = float3(verts[gid].position.x, verts[gid].position.y, verts[gid].position.z);
  outv[gid] = float4(vp * verts[gid].weight, float(verts[gid].uv.x) + float(verts[gid].uv.y));
  packed_half4 h(ph[gid].x, ph[gid].y, ph[gid].z, ph[gid].w);
  half4 hv = h;
  hv += half4(1.0h);
  h = hv;
  ph[gid].w = h[3] + h[0];
}
