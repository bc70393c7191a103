// ENTRIES: pair_kernel
// FLAGS: -I %dir/include/angled
// A kernel spread over headers: quoted includes relative to the including file (also from a header in an -I
// directory back into this tree), angle includes through -I, #pragma once and include guards reached twice.
#include "include/pair_ops.h"
#include "include/sub/guarded.h"
#include "include/common.h"
using namespace metal;

kernel void pair_kernel(device const Pair* in [[buffer(0)]], device float* out [[buffer(1)]],
                        uint i [[thread_position_in_grid]]) {
  out[i] = pair_sum(in[i]);
}
