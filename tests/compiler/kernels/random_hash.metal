// ENTRIES: random_uniform
// Counter-based random numbers (a Threefry-like mix with rotates and 64-bit arithmetic), uniform floats via as_type.
#include <metal_stdlib>
using namespace metal;

static uint2 mix_round(uint2 v, uint r) {
  v.x += v.y;
  v.y = rotate(v.y, r) ^ v.x;
  return v;
}

kernel void random_uniform(device const uint2* keys [[buffer(0)]], device float* out [[buffer(1)]],
                           device ulong* raw [[buffer(2)]], uint gid [[thread_position_in_grid]]) {
  uint2 key = keys[0];
  uint2 v = uint2(gid, 0u) + key;
  const uint rot[8] = {13, 15, 26, 6, 17, 29, 16, 24};
  for (int round = 0; round < 5; ++round) {
    for (int i = 0; i < 4; ++i) v = mix_round(v, rot[(round & 1) * 4 + i]);
    v += uint2(key.y, key.x ^ 0x1BD11BDAu) + uint2(0u, uint(round + 1));
  }
  ulong wide = (ulong(v.y) << 32) | v.x;
  raw[gid] = wide * 0x9E3779B97F4A7C15ul;
  out[gid] = as_type<float>((v.x >> 9) | 0x3f800000u) - 1.0f;
}
