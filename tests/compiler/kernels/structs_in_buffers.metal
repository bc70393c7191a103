// ENTRIES: structs_in_buffers
// Structs in device buffers (nested, with arrays and vectors), a params struct passed as `constant Params&`,
// member-wise reads and writes.
#include <metal_stdlib>
using namespace metal;

struct Params {
  uint n;
  float alpha;
  float beta;
  int shape[4];
  int strides[4];
  float4 bias;
};

struct Particle {
  float3 position;
  float3 velocity;
  float mass;
  uint id;
};

kernel void structs_in_buffers(device Particle* particles [[buffer(0)]], constant Params& p [[buffer(1)]],
                               device float* energy [[buffer(2)]], uint gid [[thread_position_in_grid]]) {
  if (gid >= p.n) return;
  device Particle& q = particles[gid];
  float3 v = q.velocity * p.beta + float3(0.0f, -9.8f, 0.0f) * p.alpha;
  q.velocity = v;
  q.position += v * p.alpha;
  int idx = 0;
  for (int d = 0; d < 4; ++d) idx += (int(gid) % p.shape[d]) * p.strides[d];
  energy[gid] = 0.5f * q.mass * dot(v, v) + float(idx) + p.bias[q.id & 3];
}
