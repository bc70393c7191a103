#version 460
// As half8_scalar.comp, with each thread's 8 halves moved as two 8-byte vectors (f16vec4, 8-byte aligned): the
// widest access lower/WidenAccesses.cpp forms for 16-bit elements (SPIR-V vectors have at most 4 components).
// `bwprobe half8_vec8.spv 2048 flat4`.
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_shader_16bit_storage : require
layout(local_size_x = 256) in;
layout(buffer_reference, std430, buffer_reference_align = 8) buffer H4 { f16vec4 v[]; };
layout(push_constant) uniform PC { uint64_t src; uint64_t dst; uint n; float scale; } pc;
void main() {
  uint i = gl_GlobalInvocationID.x;
  H4 s = H4(pc.src);
  H4 d = H4(pc.dst);
  if (i < pc.n) {
    float16_t k = float16_t(pc.scale);
    d.v[2 * i] = s.v[2 * i] * k;
    d.v[2 * i + 1] = s.v[2 * i + 1] * k;
  }
}
