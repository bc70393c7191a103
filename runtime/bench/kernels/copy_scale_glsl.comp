#version 460
// Hand-written GLSL twin of copy_scale.metal (same ABI: push block = grid + buffer addresses), for the ratio.
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
layout(local_size_x_id = 1100, local_size_y_id = 1101, local_size_z_id = 1102) in;
layout(constant_id = 1103) const uint M2V_NOMINAL_X = 1;
layout(constant_id = 1104) const uint M2V_NOMINAL_Y = 1;
layout(constant_id = 1105) const uint M2V_NOMINAL_Z = 1;
layout(buffer_reference, std430, buffer_reference_align = 16) readonly buffer Src { vec4 v; };
layout(buffer_reference, std430, buffer_reference_align = 16) writeonly buffer Dst { vec4 v; };
layout(buffer_reference, std430, buffer_reference_align = 4) readonly buffer Scale { float s; };
layout(push_constant, std430) uniform Push { uvec3 grid; uint reserved; uint64_t src; uint64_t dst; Scale scale; } pc;
void main() {
  uvec3 gid = gl_WorkGroupID * uvec3(M2V_NOMINAL_X, M2V_NOMINAL_Y, M2V_NOMINAL_Z) + gl_LocalInvocationID;
  if (gid.x >= pc.grid.x || gid.y >= pc.grid.y) return;
  uint64_t i = uint64_t(gid.y) * pc.grid.x + gid.x;
  Dst(pc.dst + i * 16ul).v = Src(pc.src + i * 16ul).v * pc.scale.s;
}
