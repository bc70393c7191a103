// Every way the specification lets a kernel template be instantiated as an entry point: `decltype`, a typedef of
// `decltype`, an alias, a function typedef, the parameter list written out, `kernel` or `[[kernel]]`, and macros
// that write them without whitespace.
#include <metal_stdlib>
using namespace metal;

template <typename T>
kernel void twice(device const T* x [[buffer(0)]], device T* y [[buffer(1)]], uint i [[thread_position_in_grid]]) {
  y[i] = x[i] + x[i];
}

template [[host_name("twice_f32")]] [[kernel]] decltype(twice<float>) twice<float>;

typedef decltype(twice<half>) twice_f16_t;
template [[host_name("twice_f16")]] kernel twice_f16_t twice<half>;

using twice_bf16_t = decltype(twice<bfloat>);
template [[host_name("twice_bf16")]] [[kernel]] twice_bf16_t twice<bfloat>;

typedef void(twice_i32_t)(device const int*, device int*, uint);
template [[host_name("twice_i32")]] kernel twice_i32_t twice<int>;

template [[host_name("twice_u32")]] kernel void twice<uint>(device const uint*, device uint*, uint);

#define INSTANTIATE_TWICE(NAME, T) template[[host_name(NAME)]][[kernel]] decltype(twice<T>) twice<T>;
INSTANTIATE_TWICE("twice_i16", short)

#define INSTANTIATE_TWICE_T(NAME, T)                                                                \
  typedef decltype(twice<T>) twice_##NAME##_t;                                                      \
  template [[host_name("twice_" #NAME)]] kernel twice_##NAME##_t twice<T>;
INSTANTIATE_TWICE_T(u16, ushort)

// a template that is not a kernel itself: the instantiation makes it one
template <typename T>
void thrice(device const T* x [[buffer(0)]], device T* y [[buffer(1)]], uint i [[thread_position_in_grid]]) {
  y[i] = x[i] * T(3);
}
typedef decltype(thrice<float>) thrice_t;
template [[host_name("thrice_f32")]] [[kernel]] thrice_t thrice<float>;
