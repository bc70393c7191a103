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
// Spins until a flag that nobody sets becomes non-zero: a kernel that never finishes (timeout test).
layout(buffer_reference, std430, buffer_reference_align = 4) coherent volatile buffer Flag { uint v; };
layout(buffer_reference, std430, buffer_reference_align = 4) coherent volatile buffer Uints { uint v[]; };
layout(push_constant, std430) uniform Push { uvec3 grid; uint reserved; Flag flag; Uints counter; } pc;
void main() {
  if (M2V_GLOBAL_ID.x >= pc.grid.x) return;
  // The store inside the loop is a side effect, so the compiler may not delete the loop. llvmpipe caps every loop
  // at 65535 iterations, so three nested loops (~2.8e14 iterations) stand in for "never finishes" there.
  uint spins = 0u;
  while (pc.flag.v == 0u)
    while (pc.flag.v == 0u)
      while (pc.flag.v == 0u) pc.counter.v[M2V_GLOBAL_ID.x] = ++spins;
}
