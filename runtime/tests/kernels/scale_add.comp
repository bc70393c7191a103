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
layout(buffer_reference, std430, buffer_reference_align = 4) readonly buffer FloatsIn { float v[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) buffer Floats { float v[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) readonly buffer Params { float a; float b; };
layout(push_constant, std430) uniform Push { uvec3 grid; uint reserved; FloatsIn src; Floats dst; Params params; } pc;
void main() {
  uvec3 gid = M2V_GLOBAL_ID;
  if (any(greaterThanEqual(gid, pc.grid))) return;
  pc.dst.v[gid.x] = pc.src.v[gid.x] * pc.params.a + pc.params.b;
}
