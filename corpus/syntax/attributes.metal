// Attribute placements and spacing as the Metal Shading Language specification allows them: straight after a
// declarator or after whitespace, inside the brackets or not, on parameters, function constants and kernels, split
// over lines, several in one list, and in the body of a macro that builds kernels.
#include <metal_stdlib>
using namespace metal;

constant bool has_bias[[function_constant(0)]];
constant float gain [[ function_constant( 1 ) ]];
constant bool use_gain = is_function_constant_defined(gain);

struct Params {
  float scale;
  uint n;
};

// no whitespace before any attribute
kernel void affine_tight(device const float* x[[buffer(0)]], device float* y[[buffer(1)]],
                         constant Params& p[[buffer(2)]],
                         device const float* bias[[buffer(3),function_constant(has_bias)]],
                         uint3 tgpig[[threadgroup_position_in_grid]], uint3 tpitg[[thread_position_in_threadgroup]],
                         uint3 ntg[[threads_per_threadgroup]]) {
  uint i = tgpig.x * ntg.x + tpitg.x;
  if (i >= p.n) return;
  float v = x[i] * p.scale;
  if (has_bias) v += bias[i];
  if (use_gain) v *= gain;
  y[i] = v;
}

// whitespace inside the brackets and before the argument list, a list split over lines, `[[kernel]]` on a line of
// its own
[[kernel]]
void affine_spaced(device const float* x [[ buffer(0) ]], device float* y [[buffer (1)]],
                   constant Params& p [[
                       buffer(2)
                   ]],
                   uint i [[ thread_position_in_grid ]] ) {
  if (i < p.n) y[i] = x[i] * p.scale;
}

// kernels built by a macro, attributes without whitespace in its body
#define SCALE_KERNEL(NAME, T)                                                                  \
  kernel void NAME(device const T* x[[buffer(0)]], device T* y[[buffer(1)]],                 \
                   constant Params& p[[buffer(2)]], uint i[[thread_position_in_grid]]) {      \
    if (i < p.n) y[i] = T(float(x[i]) * p.scale);                                             \
  }
SCALE_KERNEL(scale_macro_f32, float)
SCALE_KERNEL(scale_macro_f16, half)

// A function constant declared through a macro that spells its storage (`static constant constexpr const`), a
// threadgroup-memory argument (`[[threadgroup(0)]]`, whose name is also the address space) and the kernel's
// threadgroup-size limit in front of `kernel`: y[g * 64 + t] = x[...] * scale, plus (if use_sum) the sum of its
// threadgroup's 64 values of x * scale.
#define FC_STORAGE static constant constexpr const
FC_STORAGE bool use_sum[[function_constant(2)]];

[[max_total_threads_per_threadgroup(64)]] kernel void group_sum(device const float* x [[buffer(0)]],
                                                                 device float* y [[buffer(1)]],
                                                                 constant Params& p [[buffer(2)]],
                                                                 threadgroup float* scratch[[threadgroup(0)]],
                                                                 uint t [[thread_index_in_threadgroup]],
                                                                 uint g [[ threadgroup_position_in_grid ]]) {
  uint i = g * 64 + t;
  float v = x[i] * p.scale;
  scratch[t] = v;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (use_sum) {
    float s = 0;
    for (uint k = 0; k < 64; ++k) s += scratch[k];
    v += s;
  }
  y[i] = v;
}

// Attribute arguments that are names: a constant, a template parameter (the indices swapped by the instantiation).
// y = x * scale.
constant constexpr int kParams = 2;
template <int In, int Out>
kernel void named_indices(device const float* x [[buffer(In)]], device float* y [[buffer(Out)]],
                          constant Params& p [[buffer(kParams)]], uint i [[thread_position_in_grid]]) {
  if (i < p.n) y[i] = x[i] * p.scale;
}
template [[host_name("named_indices")]] [[kernel]] void named_indices<1, 0>(device const float*, device float*,
                                                                           constant Params&, uint);
