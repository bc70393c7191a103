// ENTRIES: fast_precise_math
// fast:: and precise:: namespaces side by side with metal::.
#include <metal_stdlib>
using namespace metal;

kernel void fast_precise_math(device const float* in [[buffer(0)]], device float* out [[buffer(1)]],
                              device float4* out4 [[buffer(2)]], uint gid [[thread_position_in_grid]]) {
  float x = in[gid];
  float a = fast::exp(x) + fast::log(fast::abs(x) + 1.0f) + fast::sqrt(fast::abs(x)) + fast::rsqrt(x * x + 1.0f);
  float b = precise::exp(x) + precise::log(precise::abs(x) + 1.0f) + precise::sqrt(precise::abs(x)) +
            precise::divide(x, 3.0f) + precise::tanh(x);
  float c = fast::tanh(x) + fast::sin(x) + fast::cos(x) + fast::pow(fast::abs(x), 2.0f) + fast::exp2(x) + fast::divide(x, 7.0f);
  out[gid] = a + b + c + metal::exp(x);
  float4 v = float4(x, -x, x * 2.0f, 1.0f);
  out4[gid] = fast::max(v, 0.0f) + precise::min(v, 1.0f) + fast::clamp(v, -1.0f, 1.0f) + fast::normalize(v + 2.0f);
}
