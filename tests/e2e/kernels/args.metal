// Argument passing: setBytes scalars and structs, dispatchThreadgroups, > 14 buffers (argument buffer spill),
// and a table of device pointers read from memory (MoE-style expert weights).
#include <metal_stdlib>
using namespace metal;

struct Params {
  float scale;
  int offset;
  uint2 dims;    // cols, rows
  float4 bias;   // 16-byte aligned
  half h;
  ushort tag;
};

// out[r][c] = in[r][c] * scale + offset + bias[c % 4] + float(h) + tag, over a dims.y x dims.x matrix.
kernel void struct_args(device const float* in [[buffer(0)]], device float* out [[buffer(1)]],
                        constant Params& p [[buffer(2)]], uint2 gid [[thread_position_in_grid]]) {
  if (gid.x >= p.dims.x || gid.y >= p.dims.y) return;
  uint i = gid.y * p.dims.x + gid.x;
  out[i] = in[i] * p.scale + float(p.offset) + p.bias[gid.x % 4] + float(p.h) + float(p.tag);
}

// Scalars of several types by setBytes.
kernel void scalar_args(device const int* in [[buffer(0)]], device long* out [[buffer(1)]],
                        constant int& a [[buffer(2)]], constant uint& b [[buffer(3)]], constant long& c [[buffer(4)]],
                        constant short& d [[buffer(5)]], uint i [[thread_position_in_grid]]) {
  out[i] = long(in[i]) * long(a) + long(b) + c - long(d);
}

// One threadgroup per row (dispatchThreadgroups): row sums, with the row given by threadgroup_position_in_grid;
// meta[row] records threadgroups_per_grid, threads_per_grid and threads_per_threadgroup.
kernel void row_sums_groups(device const float* m [[buffer(0)]], device float* sums [[buffer(1)]],
                            constant uint& cols [[buffer(2)]], device uint* meta [[buffer(3)]],
                            uint row [[threadgroup_position_in_grid]],
                            uint tid [[thread_index_in_threadgroup]], uint tptg [[threads_per_threadgroup]],
                            uint ngroups [[threadgroups_per_grid]], uint grid [[threads_per_grid]]) {
  threadgroup float part[64];
  float s = 0.0f;
  for (uint c = tid; c < cols; c += tptg) s += m[row * cols + c];
  part[tid] = s;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (tid == 0) {
    float t = 0.0f;
    for (uint k = 0; k < tptg; ++k) t += part[k];
    sums[row] = t;
    meta[row * 3 + 0] = ngroups;
    meta[row * 3 + 1] = grid;
    meta[row * 3 + 2] = tptg;
  }
}

// 16 buffers: out = sum over k of in_k * (k + 1). Push constants hold only 14 addresses -> argument buffer.
kernel void many_buffers(device const float* i0 [[buffer(0)]], device const float* i1 [[buffer(1)]],
                         device const float* i2 [[buffer(2)]], device const float* i3 [[buffer(3)]],
                         device const float* i4 [[buffer(4)]], device const float* i5 [[buffer(5)]],
                         device const float* i6 [[buffer(6)]], device const float* i7 [[buffer(7)]],
                         device const float* i8 [[buffer(8)]], device const float* i9 [[buffer(9)]],
                         device const float* i10 [[buffer(10)]], device const float* i11 [[buffer(11)]],
                         device const float* i12 [[buffer(12)]], device const float* i13 [[buffer(13)]],
                         device const float* i14 [[buffer(14)]], device float* out [[buffer(15)]],
                         uint i [[thread_position_in_grid]]) {
  out[i] = i0[i] * 1 + i1[i] * 2 + i2[i] * 3 + i3[i] * 4 + i4[i] * 5 + i5[i] * 6 + i6[i] * 7 + i7[i] * 8 +
           i8[i] * 9 + i9[i] * 10 + i10[i] * 11 + i11[i] * 12 + i12[i] * 13 + i13[i] * 14 + i14[i] * 15;
}

struct Expert {
  device const float* w;  // dim x dim weights, row-major
  float gate;
};

// MoE-style: token t uses expert route[t]; y[t] = gate * W_e x[t]. The experts' weight pointers come from memory.
kernel void moe_table(device const Expert* experts [[buffer(0)]], device const uint* route [[buffer(1)]],
                      device const float* x [[buffer(2)]], device float* y [[buffer(3)]],
                      constant uint& dim [[buffer(4)]], uint2 gid [[thread_position_in_grid]]) {
  const uint row = gid.x, t = gid.y;
  const Expert e = experts[route[t]];  // a by-value copy of a struct holding a device pointer
  float s = 0.0f;
  for (uint k = 0; k < dim; ++k) s += e.w[row * dim + k] * x[t * dim + k];
  y[t * dim + row] = e.gate * s;
}

// A plain table of pointers: ptrs[j] points at a float array; out[i] = ptrs[i % count][i / count].
kernel void pointer_table(device float* const device* ptrs [[buffer(0)]], device float* out [[buffer(1)]],
                          constant uint& count [[buffer(2)]], uint i [[thread_position_in_grid]]) {
  out[i] = ptrs[i % count][i / count];
}
