// Metal 4 tensors over memory (<metal_tensor>, tensor_inline), checked by tests/e2e/e2e_tests.cpp (E2E.Tensor*).
#include <metal_stdlib>
#include <MetalPerformancePrimitives/MetalPerformancePrimitives.h>
using namespace metal;

// Thread (i, j) reads element (i, j) of three tensors: a strided float tensor of 7 columns (every other float, rows
// 16 floats apart; columns past 7 read as 0), and the same packed bytes as int4 and as uint4 (12 columns a row).
kernel void tensor_views(device float* data [[buffer(0)]], device uchar* packed [[buffer(1)]],
                         device float* out_f [[buffer(2)]], device int* out_s4 [[buffer(3)]],
                         device uint* out_u4 [[buffer(4)]], constant int& rows [[buffer(5)]],
                         uint2 pos [[thread_position_in_grid]]) {
  tensor<device float, dextents<int, 2>, tensor_inline> f(data, dextents<int, 2>(7, rows), array<int, 2>{2, 16});
  tensor<device int4b_format, extents<int, 12, dynamic_extent>, tensor_inline> s4(
      packed, extents<int, 12, dynamic_extent>(rows));
  tensor<const device uint4b_format, dextents<int, 2>, tensor_inline> u4(packed, dextents<int, 2>(12, rows));
  int i = int(pos.x), j = int(pos.y);
  out_f[j * 12 + i] = f.get_or_zero(i, j);
  out_s4[j * 12 + i] = int(s4.get(i, j));
  out_u4[j * 12 + i] = uint(u4.get(i, j));
  if (i == 0 && j == 0) out_f[rows * 12] = float(f.get_extent(0) + f.get_stride(1) + s4.get_extent(1) + int(s4.rank()));
}

// One simdgroup: D (16 x 32, int) = A (16 x 32, int8) * W^T with W (32 x 32) an int4 tensor over memory, rows of 32
// (16 bytes), as uzu's integer matmul passes its weights (matmul2d with transpose_right, relaxed precision).
kernel void int4_tensor_matmul(device const char* a [[buffer(0)]], device uchar* w [[buffer(1)]],
                               device int* d [[buffer(2)]], uint lane [[thread_index_in_simdgroup]]) {
  constexpr auto desc = mpp::tensor_ops::matmul2d_descriptor(16, 32, 32, false, true, true);
  mpp::tensor_ops::matmul2d<desc, execution_simdgroup> op;
  auto left = op.template get_left_input_cooperative_tensor<char, int4b_format, int>();
  tensor<device int4b_format, extents<int, 32, 32>, tensor_inline> right(w, extents<int, 32, 32>{},
                                                                       array<int, 2>{1, 32});
  auto dst = op.template get_destination_cooperative_tensor<decltype(left), decltype(right), int>();
  // the left input's elements where the cooperative layout puts them (MetalPerformancePrimitives.h)
  tensor<device const char, extents<int, 32, 16>, tensor_inline> av(a, extents<int, 32, 16>{});
  uint q = lane / 4;
  int fm = int((q & 4u) | ((lane >> 1) & 3u)), fn = int(((q & 2u) | (lane & 1u)) * 4u);
  for (int bc = 0; bc < 2; ++bc)
    for (int i = 0; i < 8; ++i) left[bc * 8 + i] = av.get(bc * 16 + fn + i % 4, fm + 8 * (i / 4));
  op.run(left, right, dst);
  for (int bc = 0; bc < 2; ++bc)
    for (int i = 0; i < 8; ++i) d[(fm + 8 * (i / 4)) * 32 + bc * 16 + fn + i % 4] = dst[bc * 8 + i];
}
