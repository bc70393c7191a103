"""Struct copies out of device memory (lower/ExpandMemoryIntrinsics.cpp): a 16-byte copy the program declares only
2-byte aligned reads 16 bytes at once when the address is aligned and 2 bytes at a time when it is not. Both must
move the same bytes (MLX's tile loaders copy such vectors; a slice at an odd element offset is unaligned)."""
import numpy as np
import pytest

import metal2vk as m2v

SOURCE = """
#include <metal_stdlib>
using namespace metal;
struct Vec8 { half v[8]; };  // 16 bytes, 2-byte aligned
kernel void copy_vec8(device const half* src [[buffer(0)]], device half* dst [[buffer(1)]],
                      threadgroup Vec8* tile [[threadgroup(0)]], uint i [[thread_position_in_grid]],
                      uint l [[thread_position_in_threadgroup]]) {
  tile[l] = *(const device Vec8*)(src + 8 * i);   // device -> threadgroup
  threadgroup_barrier(mem_flags::mem_threadgroup);
  *(device Vec8*)(dst + 8 * i) = tile[l];         // threadgroup -> device
}
"""


@pytest.mark.parametrize("offset_elements", [0, 1, 2, 4, 8])
def test_copy_at_any_alignment(tmp_path, offset_elements):
    path = tmp_path / "copy.metal"
    path.write_text(SOURCE)
    k = m2v.compile_library(str(path))["copy_vec8"]
    n = 64
    src = np.arange(8 * n + 16, dtype=np.float16)
    s = m2v.Stream()
    sb, db = m2v.Buffer(src.nbytes), m2v.Buffer(8 * n * 2)
    s.upload(sb, src)
    s.set_kernel(k)
    s.set_buffer(sb, 0, 2 * offset_elements)  # 2, 4, 8 or 16-byte aligned source
    s.set_buffer(db, 1)
    s.set_threadgroup_memory_length(32 * 16, 0)
    s.dispatch_threads((n, 1, 1), (32, 1, 1))
    got = s.read(db, np.float16, (8 * n,))
    np.testing.assert_array_equal(got, src[offset_elements:offset_elements + 8 * n])
