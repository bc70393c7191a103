#version 460
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
// ABI: workgroup size from spec ids 131072.. (written 1100.. here; remapped after glslang, see runtime/CMakeLists.txt)
layout(local_size_x_id = 1100, local_size_y_id = 1101, local_size_z_id = 1102) in;
// The threadgroup size the host asked for; edge regions run with a smaller workgroup (docs/ABI.md).
layout(constant_id = 1103) const uint M2V_NOMINAL_X = 1;
layout(constant_id = 1104) const uint M2V_NOMINAL_Y = 1;
layout(constant_id = 1105) const uint M2V_NOMINAL_Z = 1;
#define M2V_GLOBAL_ID (gl_WorkGroupID * uvec3(M2V_NOMINAL_X, M2V_NOMINAL_Y, M2V_NOMINAL_Z) + gl_LocalInvocationID)
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
layout(buffer_reference, std430, buffer_reference_align = 4) buffer Uints { uint v[]; };
layout(push_constant, std430) uniform Push { uvec3 grid; uint reserved; Uints sizes; Uints sums; } pc;
void main() {
  uint i = M2V_GLOBAL_ID.x;
  uint live = subgroupAdd(1u);  // lanes in this subgroup: edge regions run only the live threads (Metal)
  if (i >= pc.grid.x) return;
  pc.sizes.v[i] = gl_SubgroupSize;
  pc.sums.v[i] = live;
}
