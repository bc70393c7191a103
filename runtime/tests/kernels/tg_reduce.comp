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
// [[threadgroup(0)]] float* partial, length from setThreadgroupMemoryLength (spec id 131088, written 1200).
layout(constant_id = 1200) const uint PARTIAL_BYTES = 4u;
shared float partial[PARTIAL_BYTES / 4u];
layout(buffer_reference, std430, buffer_reference_align = 4) readonly buffer FloatsIn { float v[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) buffer Floats { float v[]; };
layout(push_constant, std430) uniform Push { uvec3 grid; uint reserved; FloatsIn src; Floats sums; } pc;
void main() {
  uint i = M2V_GLOBAL_ID.x, lid = gl_LocalInvocationID.x;
  bool live = i < pc.grid.x;  // out-of-grid threads still reach the barrier, but contribute nothing
  if (lid < PARTIAL_BYTES / 4u) partial[lid] = live ? pc.src.v[i] : 0.0;
  barrier();
  if (lid == 0u) {
    float total = 0.0;
    for (uint k = 0u; k < min(gl_WorkGroupSize.x, PARTIAL_BYTES / 4u); ++k) total += partial[k];
    pc.sums.v[gl_WorkGroupID.x] = total;
  }
}
