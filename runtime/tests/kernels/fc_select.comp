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
// Function constants: value at spec id = Metal index, "defined" flag at 65536 + index (written 1000 + index).
layout(constant_id = 0) const int MUL = 0;
layout(constant_id = 1000) const bool MUL_DEFINED = false;
layout(constant_id = 1) const bool NEGATE = false;
layout(constant_id = 1001) const bool NEGATE_DEFINED = false;
layout(constant_id = 2) const float OFFSET = 0.0;
layout(constant_id = 1002) const bool OFFSET_DEFINED = false;
layout(buffer_reference, std430, buffer_reference_align = 4) buffer Ints { int v[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) buffer Floats { float v[]; };
layout(push_constant, std430) uniform Push { uvec3 grid; uint reserved; Ints ints; Floats floats; } pc;
void main() {
  uint i = M2V_GLOBAL_ID.x;
  if (i >= pc.grid.x) return;
  int value = MUL_DEFINED ? int(i) * MUL : -7;
  if (NEGATE) value = -value;
  pc.ints.v[i] = value;
  if (OFFSET_DEFINED) pc.floats.v[i] = float(i) + OFFSET;
}
