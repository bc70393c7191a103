// A file that holds a render pipeline's functions beside a kernel, as Metal code often does: the vertex and fragment
// functions (qualifier or attribute, stage-in structs, render-only attributes and functions) are declared and not
// compiled; the kernel compiles and runs. y = x * scale.
#include <metal_stdlib>
using namespace metal;

struct Params {
  float scale;
  uint n;
};

struct Varyings {
  float4 clip [[position]];
  float size [[point_size]];
  float3 tint [[user(tint)]];
};

vertex Varyings point_vertex(const device float4* points [[buffer(0)]], constant float4x4& mvp [[buffer(1)]],
                             uint v [[vertex_id]]) {
  Varyings out;
  out.clip = mvp * points[v];
  out.size = 4.0f;
  out.tint = float3(1.0f, 0.5f, 0.25f);
  return out;
}

fragment half4 point_fragment(Varyings in [[stage_in]], float2 pc [[point_coord]]) {
  if (length(pc - 0.5f) > 0.5f) discard_fragment();
  return half4(half3(in.tint), 1.0h);
}

[[fragment]] float4 flat_fragment() { return float4(1.0f); }

kernel void scale_beside_render(device const float* x [[buffer(0)]], device float* y [[buffer(1)]],
                                constant Params& p [[buffer(2)]], uint i [[thread_position_in_grid]]) {
  if (i < p.n) y[i] = x[i] * p.scale;
}
