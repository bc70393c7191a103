#version 460
// Hand-written reference for issue 23's access-width question: each thread scales 8 adjacent halves (16 bytes) with
// 8 separate 2-byte loads and 8 separate 2-byte stores, the shape metal2vk emitted for MLX's 16-bit elementwise
// kernels before lower/WidenAccesses.cpp. Same dispatch as ../shared/tools/vkprobe/flat4.comp (one thread per 16
// bytes, push constants {src, dst, n4, scale}): `bwprobe half8_scalar.spv 2048 flat4`. Compare half8_vec8 and
// half8_vec16 (bench/membound-widening.md).
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_shader_16bit_storage : require
layout(local_size_x = 256) in;
layout(buffer_reference, std430, buffer_reference_align = 2) buffer H { float16_t v[]; };
layout(push_constant) uniform PC { uint64_t src; uint64_t dst; uint n; float scale; } pc;
void main() {
  uint i = gl_GlobalInvocationID.x;
  H s = H(pc.src);
  H d = H(pc.dst);
  if (i < pc.n) {
    float16_t k = float16_t(pc.scale);
    for (uint j = 0; j < 8; ++j) d.v[8 * i + j] = s.v[8 * i + j] * k;
  }
}
