// Methods and constructors qualified by the address space of `this` (the specification's `thread`, `device`,
// `threadgroup` and `constant` member function qualifiers), overloaded on it, beside unqualified ones.
#include <metal_stdlib>
using namespace metal;

struct Cell {
  float v;
  Cell() thread = default;
  Cell() threadgroup = default;
  float get() const thread { return v; }
  float get() const device { return v; }
  float get() const threadgroup { return v; }
  float get() const constant { return v; }
  void add(float x) thread { v += x; }
  void add(float x) device { v += x; }
  void add(float x) threadgroup { v += x; }
};

struct Acc {
  float sum;
  Acc(float s) thread : sum(s) {}
  Acc(float s, float t) thread : sum(s + t) {}
  Acc(const device Cell& c) thread : sum(c.get()) {}
  void take(const threadgroup Cell& c) thread { sum += c.get(); }
  void take(const constant Cell& c) thread { sum += 10.0f * c.get(); }
  float value() const thread { return sum; }
};

// cells[i] += 1; y[i] = cells[i] (before) + i + 10 k + (2 + 3)
kernel void methods(device Cell* cells [[buffer(0)]], constant Cell* k [[buffer(1)]], device float* y [[buffer(2)]],
                    uint i [[thread_position_in_grid]], uint l [[thread_position_in_threadgroup]]) {
  threadgroup Cell tg[64];
  tg[l].v = 0.0f;
  tg[l].add(float(i));
  threadgroup_barrier(mem_flags::mem_threadgroup);
  Acc a(cells[i]);
  Acc b(2.0f, 3.0f);
  a.take(tg[l]);
  a.take(k[0]);
  cells[i].add(1.0f);
  y[i] = a.value() + b.value();
}
