// ENTRIES: device_methods
// Member functions called on objects in device, constant and threadgroup memory, with Metal's address-space method
// qualifiers, and whole structs copied out of device memory (complex-number style).
#include <metal_stdlib>
using namespace metal;

struct Complex {
  float re, im;
  Complex operator*(Complex o) const { return {re * o.re - im * o.im, re * o.im + im * o.re}; }
  float norm2() const device { return re * re + im * im; }
};

struct Scale {
  float factor;
  float apply(float x) const constant { return x * factor; }
};

kernel void device_methods(const device Complex* a [[buffer(0)]], const device Complex* b [[buffer(1)]],
                           device float* out [[buffer(2)]], constant Scale& scale [[buffer(3)]],
                           uint i [[thread_position_in_grid]], uint lid [[thread_position_in_threadgroup]]) {
  threadgroup Complex shared[64];
  shared[lid] = a[i];                 // struct copy from device to threadgroup memory
  threadgroup_barrier(mem_flags::mem_threadgroup);
  Complex p = shared[lid] * b[i];     // operator on a threadgroup object with a device argument
  out[i] = scale.apply(p.norm2() + a[i].norm2());
}
