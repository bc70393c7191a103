"""Wide accesses checked where their addresses are known (lower/WidenAccesses.cpp, versionAfter): the row base
`m + batch offset + row * ld` -- the batch offset chosen by a function constant, one path summing strides read at
run-time indices, `ld` a params field read after an early return -- is tested once per threadgroup after the barrier,
and only threadgroups whose base is a multiple of 16 bytes take the widened copy. Both paths must compute the same
thing: buffers bound at offsets of 0, 1, 2, 4 and 8 elements, row strides whose rows are and are not 16-byte
multiples (threadgroups of one dispatch then take different paths), batch strides that are and are not multiples of
16 elements, with and without the batch path, against numpy."""
import numpy as np
import pytest

import metal2vk as m2v

SOURCE = """
#include <metal_stdlib>
using namespace metal;
struct RowParams {
  int rows;
  int ld;
  int ndim;
  int pad;
  long batch_stride;
};
constant bool has_batch [[function_constant(10)]];
// One threadgroup per (row, batch); thread t reads the row's four halves at 4 * t.
kernel void batched_row_dot(device const half* m [[buffer(0)]], device const half* x [[buffer(1)]],
                            constant RowParams* p [[buffer(2)]], constant int* shape [[buffer(3)]],
                            constant long* strides [[buffer(4)]], device float* out [[buffer(5)]],
                            uint3 tid [[threadgroup_position_in_grid]], uint t [[thread_index_in_threadgroup]]) {
  if (int(tid.y) >= p->rows) return;
  if (has_batch) {
    long offset = 0;
    uint z = tid.z;
    for (int i = p->ndim - 1; i >= 0; --i) {
      offset += long(z % uint(shape[i])) * strides[i];
      z /= uint(shape[i]);
    }
    m += offset;
  } else {
    m += p->batch_stride * tid.z;
  }
  threadgroup_barrier(mem_flags::mem_none);
  device const half* r = m + tid.y * p->ld + 4 * t;
  device const half* v = x + 4 * t;
  out[(tid.z * p->rows + tid.y) * 8 + t] =
      float(r[0]) * float(v[0]) + float(r[1]) * float(v[1]) + float(r[2]) * float(v[2]) + float(r[3]) * float(v[3]);
}
"""


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    path = tmp_path_factory.mktemp("wide_later") / "wide_later.metal"
    path.write_text(SOURCE)
    return m2v.compile_library(str(path))


@pytest.mark.parametrize("offset", [0, 1, 2, 4, 8])
@pytest.mark.parametrize("ld", [64, 36])
@pytest.mark.parametrize("has_batch", [False, True])
@pytest.mark.parametrize("batch_pad", [0, 4])
def test_batched_row_dot_any_alignment(lib, offset, ld, has_batch, batch_pad):
    rows, shape = 5, (2, 2)
    batches = shape[0] * shape[1]
    bstride = rows * ld + batch_pad  # elements between batches
    strides = (2 * bstride, bstride)  # the batch path's strides for the same layout
    rng = np.random.default_rng(2301 + offset + ld + 7 * batch_pad + has_batch)
    m = (rng.integers(-8, 9, batches * bstride + 64) / 4).astype(np.float16)
    x = (rng.integers(-8, 9, 64) / 4).astype(np.float16)
    params = np.array([rows, ld, len(shape), 0], np.int32).tobytes() + np.int64(bstride).tobytes()
    s = m2v.Stream()
    mb, xb, ob = s.buffer(m), s.buffer(x), m2v.Buffer(batches * rows * 8 * 4)
    s.set_kernel(lib["batched_row_dot"])
    s.set_function_constant(10, has_batch)
    s.set_buffer(mb, 0, 2 * offset)
    s.set_buffer(xb, 1, 2 * offset)
    s.set_bytes(np.frombuffer(params, np.uint8), 2)
    s.set_bytes(np.array(shape, np.int32), 3)
    s.set_bytes(np.array(strides, np.int64), 4)
    s.set_buffer(ob, 5)
    s.dispatch_threadgroups((1, rows + 1, batches), (8, 1, 1))  # one row past the end: the early return
    got = s.read(ob, np.float32, (batches, rows, 8))
    mm = m[offset:].astype(np.float64)
    xx = x[offset:offset + 32].astype(np.float64).reshape(8, 4)
    want = np.zeros((batches, rows, 8))
    for z in range(batches):
        for y in range(rows):
            base = z * bstride + y * ld
            want[z, y] = (mm[base:base + 32].reshape(8, 4) * xx).sum(1)
    np.testing.assert_array_equal(got, want.astype(np.float32))  # small integers / 16: exact in float
