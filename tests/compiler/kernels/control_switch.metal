// ENTRIES: control_switch
// switch with fallthrough, default in the middle, a switch inside a loop with break/continue, short-circuit && ||
// and ?: chains.
#include <metal_stdlib>
using namespace metal;

enum class Op : int { Add = 0, Mul = 1, Max = 2, Min = 3, Pow = 7 };

float apply(Op op, float a, float b) {
  switch (op) {
    case Op::Add: return a + b;
    case Op::Mul: return a * b;
    case Op::Max: return max(a, b);
    case Op::Min: return min(a, b);
    default: return pow(abs(a), b);
  }
}

kernel void control_switch(device const float* a [[buffer(0)]], device const float* b [[buffer(1)]],
                           device const int* ops [[buffer(2)]], device float* out [[buffer(3)]],
                           uint gid [[thread_position_in_grid]]) {
  float r = apply(Op(ops[gid] & 7), a[gid], b[gid]);
  int code = ops[gid] >> 3;
  switch (code) {
    case 0:
      r += 1.0f;
      [[fallthrough]];
    case 1:
      r *= 2.0f;
      break;
    default:
      r = -r;
      break;
    case 5:
      r = 0.0f;
  }
  for (int i = 0; i < 6; ++i) {
    switch (i % 3) {
      case 0: continue;
      case 1: r += 0.5f; break;
      case 2: if (r > 10.0f) { i = 6; } break;
    }
  }
  bool ok = (gid < 100 && a[gid] > 0.0f) || (b[gid] < 0.0f && ops[gid] != 3) || !(r == r);
  out[gid] = ok ? r : (a[gid] > b[gid] ? a[gid] : b[gid] > 0.0f ? b[gid] : 0.0f);
}
