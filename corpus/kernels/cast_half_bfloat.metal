// half -> bfloat conversion, alone in its file: Metal allows static_cast<bfloat>(half).
#include <metal_stdlib>
using namespace metal;

[[kernel]] void copy_half_bfloat(device const half* src [[buffer(0)]], device bfloat* dst [[buffer(1)]],
                                 uint index [[thread_position_in_grid]]) {
  dst[index] = static_cast<bfloat>(src[index]);
}
