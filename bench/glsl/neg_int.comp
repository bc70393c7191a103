#version 460
// Hand-written counterpart of corpus/kernels/elementwise.metal's `neg_int` (y[i] = -x[i] for i < size) with the
// metal2vk ABI (docs/ABI.md), for the comparison in bench/membound-h200.md. Build: glslangValidator -V
// --target-env vulkan1.3, then build/runtime/m2v_spv_remap_spec_ids (ids 1100.. -> 131072..); swap it for
// neg_int.spv in an --emit-modules folder and run m2v-sweep-run on corpus/bench --filter neg_big.
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
layout(local_size_x_id = 1100, local_size_y_id = 1101, local_size_z_id = 1102) in;
layout(buffer_reference, std430, buffer_reference_align = 4) readonly buffer Ints { int v[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) buffer OutInts { int v[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) readonly buffer Size { uint n; };
layout(push_constant, std430) uniform Push { uvec3 grid; uint reserved; Ints x; OutInts y; Size size; } pc;
void main() {
  uint i = gl_GlobalInvocationID.x;
  if (i < pc.size.n) pc.y.v[i] = -pc.x.v[i];
}
