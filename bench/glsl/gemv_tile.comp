#version 460
// y = W x, W (N x K) row-major half, x and y half: the tile of MLX's gemv kernel
// (gemv_float16_bm8_bn1_sm1_sn32_tm4_tn4): 8 subgroups of 32 per workgroup, subgroup w of workgroup g owns rows
// (g * 8 + w) * 4 .. + 4, lane l reads 4 adjacent elements of x and of each row at k = 4 l, stepping by 128 (one
// 8-byte load per row per step), accumulates in float, then the subgroup sums its lanes and lane 0 writes 4 results.
// Written by hand with metal2vk's kernel ABI (docs/ABI.md: push constants = grid, then one buffer address per
// argument; workgroup size from specialization constants), so metal2vk's runtime runs it exactly like a translated
// kernel. Variants (glslangValidator -D...): READONLY declares W and x readonly restrict; UNROLL2 takes two steps per
// loop trip; ADDR64 computes every load's address as metal2vk's modules did (a 64-bit element index, plus the row's
// offset, times 2, plus the base: integer-to-pointer per load). bench/glsl_gemv.py runs them beside MLX's gemv as
// metal2vk translates it.
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_shader_16bit_storage : require
#extension GL_KHR_shader_subgroup_arithmetic : require
layout(local_size_x_id = 131072, local_size_y_id = 131073, local_size_z_id = 131074) in;
#ifdef READONLY
#define IN_QUALIFIERS readonly restrict
#else
#define IN_QUALIFIERS
#endif
layout(buffer_reference, std430, buffer_reference_align = 8) IN_QUALIFIERS buffer H4 { f16vec4 v[]; };
layout(buffer_reference, std430, buffer_reference_align = 2) buffer H1 { float16_t v[]; };
layout(buffer_reference, std430, buffer_reference_align = 8) IN_QUALIFIERS buffer V4 { f16vec4 v; };
layout(buffer_reference, std430, buffer_reference_align = 4) readonly buffer U1 { uint v; };
layout(push_constant) uniform PC { uvec3 grid; uint pad; uint64_t w; uint64_t x; uint64_t y; uint64_t k; } pc;

void main() {
  const uint lane = gl_SubgroupInvocationID, warp = gl_SubgroupID;
  const uint K = U1(pc.k).v;
  const uint row0 = (gl_WorkGroupID.x * 8 + warp) * 4;
  H4 x = H4(pc.x);
  H4 r0 = H4(pc.w + 2ul * uint64_t(row0) * K), r1 = H4(pc.w + 2ul * uint64_t(row0 + 1) * K);
  H4 r2 = H4(pc.w + 2ul * uint64_t(row0 + 2) * K), r3 = H4(pc.w + 2ul * uint64_t(row0 + 3) * K);
  vec4 acc = vec4(0.0);
  const uint steps = K / 128;  // K a multiple of 128
  uint s = 0;
#ifdef ADDR64
  const uint64_t wrow = pc.w + 2ul * uint64_t(row0) * K, ld = K, ld2 = 2ul * K, ld3 = 3ul * K;
  for (uint64_t e = 4ul * lane; s < steps; ++s, e += 128) {
    vec4 xa = vec4(V4(pc.x + e * 2).v);
    acc.x += dot(vec4(V4(wrow + e * 2).v), xa);
    acc.y += dot(vec4(V4(wrow + (e + ld) * 2).v), xa);
    acc.z += dot(vec4(V4(wrow + (e + ld2) * 2).v), xa);
    acc.w += dot(vec4(V4(wrow + (e + ld3) * 2).v), xa);
  }
#endif
#ifdef UNROLL2
  for (; s + 2 <= steps; s += 2) {
    const uint i = s * 32 + lane, j = i + 32;
    vec4 xa = vec4(x.v[i]), xb = vec4(x.v[j]);
    acc.x += dot(vec4(r0.v[i]), xa) + dot(vec4(r0.v[j]), xb);
    acc.y += dot(vec4(r1.v[i]), xa) + dot(vec4(r1.v[j]), xb);
    acc.z += dot(vec4(r2.v[i]), xa) + dot(vec4(r2.v[j]), xb);
    acc.w += dot(vec4(r3.v[i]), xa) + dot(vec4(r3.v[j]), xb);
  }
#endif
  for (; s < steps; ++s) {
    const uint i = s * 32 + lane;
    vec4 xa = vec4(x.v[i]);
    acc.x += dot(vec4(r0.v[i]), xa);
    acc.y += dot(vec4(r1.v[i]), xa);
    acc.z += dot(vec4(r2.v[i]), xa);
    acc.w += dot(vec4(r3.v[i]), xa);
  }
  acc = subgroupAdd(acc);
  if (lane == 0) {
    H1 y = H1(pc.y);
    y.v[row0] = float16_t(acc.x);
    y.v[row0 + 1] = float16_t(acc.y);
    y.v[row0 + 2] = float16_t(acc.z);
    y.v[row0 + 3] = float16_t(acc.w);
  }
}
