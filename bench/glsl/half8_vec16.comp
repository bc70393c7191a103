#version 460
// As half8_scalar.comp, with each thread's 8 halves moved as one 16-byte access (uvec4, unpacked to half pairs).
// `bwprobe half8_vec16.spv 2048 flat4`.
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
layout(local_size_x = 256) in;
layout(buffer_reference, std430, buffer_reference_align = 16) buffer U4 { uvec4 v[]; };
layout(push_constant) uniform PC { uint64_t src; uint64_t dst; uint n; float scale; } pc;
void main() {
  uint i = gl_GlobalInvocationID.x;
  U4 s = U4(pc.src);
  U4 d = U4(pc.dst);
  if (i < pc.n) {
    f16vec2 k = f16vec2(float16_t(pc.scale));
    uvec4 w = s.v[i];
    for (int j = 0; j < 4; ++j) w[j] = packFloat2x16(unpackFloat2x16(w[j]) * k);
    d.v[i] = w;
  }
}
