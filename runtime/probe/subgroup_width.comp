#version 460
// Runtime self-check: each invocation writes how many lanes its subgroup really has. Run with a required subgroup
// size; any other count means the driver does not honour it.
#extension GL_EXT_buffer_reference : require
#extension GL_KHR_shader_subgroup_ballot : require
layout(local_size_x = 64) in;
layout(buffer_reference, std430, buffer_reference_align = 4) buffer Uints { uint v[]; };
layout(push_constant, std430) uniform Push { uvec3 grid; uint reserved; Uints lanes; } pc;
void main() {
  uint lanes = subgroupBallotBitCount(subgroupBallot(true));
  pc.lanes.v[gl_LocalInvocationIndex] = lanes * 1000u + gl_SubgroupSize;
}
