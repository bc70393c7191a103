#version 460
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
// ABI: workgroup size from spec ids 131072.. (written 1100.. here; remapped after glslang, see runtime/CMakeLists.txt)
layout(local_size_x_id = 1100, local_size_y_id = 1101, local_size_z_id = 1102) in;
// Spins until a flag that nobody sets becomes non-zero: a kernel that never finishes (timeout test).
layout(buffer_reference, std430, buffer_reference_align = 4) coherent volatile buffer Flag { uint v; };
layout(buffer_reference, std430, buffer_reference_align = 4) coherent volatile buffer Uints { uint v[]; };
layout(push_constant, std430) uniform Push { uvec3 grid; uint reserved; Flag flag; Uints counter; } pc;
void main() {
  if (gl_GlobalInvocationID.x >= pc.grid.x) return;
  // The store inside the loop is a side effect, so the compiler may not delete the loop. llvmpipe caps every loop
  // at 65535 iterations, so three nested loops (~2.8e14 iterations) stand in for "never finishes" there.
  uint spins = 0u;
  while (pc.flag.v == 0u)
    while (pc.flag.v == 0u)
      while (pc.flag.v == 0u) pc.counter.v[gl_GlobalInvocationID.x] = ++spins;
}
