#version 460
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
// ABI: workgroup size from spec ids 131072.. (written 1100.. here; remapped after glslang, see runtime/CMakeLists.txt)
layout(local_size_x_id = 1100, local_size_y_id = 1101, local_size_z_id = 1102) in;
layout(constant_id = 1103) const uint M2V_NOMINAL_X = 1;
layout(constant_id = 1104) const uint M2V_NOMINAL_Y = 1;
layout(constant_id = 1105) const uint M2V_NOMINAL_Z = 1;
#define M2V_GLOBAL_ID (gl_WorkGroupID * uvec3(M2V_NOMINAL_X, M2V_NOMINAL_Y, M2V_NOMINAL_Z) + gl_LocalInvocationID)
// endless.comp with the abort check of docs/ABI.md ("Abort word"), written by hand: the innermost loop returns once
// the runtime sets the word whose address follows the buffer addresses in the push block.
layout(buffer_reference, std430, buffer_reference_align = 4) coherent volatile buffer Flag { uint v; };
layout(buffer_reference, std430, buffer_reference_align = 4) coherent volatile buffer Uints { uint v[]; };
layout(push_constant, std430) uniform Push { uvec3 grid; uint reserved; Flag flag; Uints counter; Flag abortWord; } pc;
void main() {
  if (M2V_GLOBAL_ID.x >= pc.grid.x) return;
  uint spins = 0u;
  while (pc.flag.v == 0u)
    while (pc.flag.v == 0u)
      while (pc.flag.v == 0u) {
        pc.counter.v[M2V_GLOBAL_ID.x] = ++spins;
        if (pc.abortWord.v != 0u) return;
      }
}
