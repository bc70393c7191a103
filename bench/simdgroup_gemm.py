"""A plain simdgroup_matrix GEMM (our own kernel, fragments loaded straight from device memory) on both
simdgroup_matrix paths, with cuBLAS (PyTorch) on the same GPU in the same process: separates the cost of the
multiply lowering from that of a kernel's data movement (MLX's steel GEMM: bench/mlx_vs_torch.py). The same for
Metal 4's matmul2d on cooperative tensors (`nax_mma_only`).

    PYTHONPATH=<metal2vk python dir> python3 bench/simdgroup_gemm.py [--n 4096] [--reps 10] [--report PREFIX]
"""
import argparse
import json
import os
import sys
import tempfile
import time

import numpy as np

import metal2vk as m2v

SOURCE = """
#include <metal_stdlib>
#include <MetalPerformancePrimitives/MetalPerformancePrimitives.h>
using namespace metal;
// C (M x N, float) = A (M x K) * B (K x N), half; one simdgroup per 32x32 block of C, K a multiple of 8.
[[kernel]] void gemm32(device const half* A [[buffer(0)]], device const half* B [[buffer(1)]],
                       device float* C [[buffer(2)]], constant uint3& mnk [[buffer(3)]],
                       uint2 tg [[threadgroup_position_in_grid]]) {
  const uint N = mnk.y, K = mnk.z, row0 = tg.y * 32, col0 = tg.x * 32;
  simdgroup_float8x8 acc[4][4];
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) acc[i][j] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
  for (uint k = 0; k < K; k += 8) {
    simdgroup_half8x8 a[4], b[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) simdgroup_load(a[i], A + (row0 + 8 * i) * K + k, K);
#pragma unroll
    for (int j = 0; j < 4; ++j) simdgroup_load(b[j], B + k * N + col0 + 8 * j, N);
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int j = 0; j < 4; ++j) simdgroup_multiply_accumulate(acc[i][j], a[i], b[j], acc[i][j]);
  }
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) simdgroup_store(acc[i][j], C + (row0 + 8 * i) * N + col0 + 8 * j, N);
}

// gemm32 with each lane's two elements loaded as one 32-bit half2 (Apple's layout keeps them adjacent).
[[kernel]] void gemm32_h2(device const half* A [[buffer(0)]], device const half* B [[buffer(1)]],
                          device float* C [[buffer(2)]], constant uint3& mnk [[buffer(3)]],
                          uint2 tg [[threadgroup_position_in_grid]], ushort lane [[thread_index_in_simdgroup]]) {
  const uint N = mnk.y, K = mnk.z, row0 = tg.y * 32, col0 = tg.x * 32;
  const ushort q = lane / 4, fm = (q & 4) + ((lane / 2) % 4), fn = (q & 2) * 2 + (lane % 2) * 2;
  simdgroup_float8x8 acc[4][4];
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) acc[i][j] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
  for (uint k = 0; k < K; k += 8) {
    simdgroup_half8x8 a[4], b[4];
#pragma unroll
    for (int i = 0; i < 4; ++i)
      a[i].thread_elements() = *(device const half2*)(A + (row0 + 8 * i + fm) * K + k + fn);
#pragma unroll
    for (int j = 0; j < 4; ++j)
      b[j].thread_elements() = *(device const half2*)(B + (k + fm) * N + col0 + 8 * j + fn);
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int j = 0; j < 4; ++j) simdgroup_multiply_accumulate(acc[i][j], a[i], b[j], acc[i][j]);
  }
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) simdgroup_store(acc[i][j], C + (row0 + 8 * i) * N + col0 + 8 * j, N);
}

// The same multiplies on fragments loaded once: what the multiply lowering costs without the loads.
[[kernel]] void mma_only(device const half* A [[buffer(0)]], device const half* B [[buffer(1)]],
                         device float* C [[buffer(2)]], constant uint3& mnk [[buffer(3)]],
                         uint2 tg [[threadgroup_position_in_grid]]) {
  const uint N = mnk.y, K = mnk.z, row0 = tg.y * 32, col0 = tg.x * 32;
  simdgroup_float8x8 acc[4][4];
  simdgroup_half8x8 a[4], b[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    simdgroup_load(a[i], A + (row0 + 8 * i) * K, K);
    simdgroup_load(b[i], B + col0 + 8 * i, N);
#pragma unroll
    for (int j = 0; j < 4; ++j) acc[i][j] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
  }
  for (uint k = 0; k < K; k += 8) {
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int j = 0; j < 4; ++j) simdgroup_multiply_accumulate(acc[i][j], a[i], b[j], acc[i][j]);
  }
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) simdgroup_store(acc[i][j], C + (row0 + 8 * i) * N + col0 + 8 * j, N);
}

// Metal 4's matmul2d (MetalPerformancePrimitives) the same way: 16x32x16 multiplies on cooperative tensors loaded
// once (through the layout in docs/STDLIB.md), one simdgroup per 16x32 block of C: what the matmul2d lowering costs
// without the loads.
inline short2 nax_position(ushort lane, int i) {
  short q = lane >> 2;
  return short2(((q & 2) | (lane & 1)) * 4 + i % 4, ((q & 4) | ((lane >> 1) & 3)) + (i / 4) * 8);
}
[[kernel]] void nax_mma_only(device const half* A [[buffer(0)]], device const half* B [[buffer(1)]],
                             device float* C [[buffer(2)]], constant uint3& mnk [[buffer(3)]],
                             uint2 tg [[threadgroup_position_in_grid]], ushort lane [[thread_index_in_simdgroup]]) {
  const uint N = mnk.y, K = mnk.z, row0 = tg.y * 16, col0 = tg.x * 32;
  constexpr auto desc = mpp::tensor_ops::matmul2d_descriptor(
      16, 32, 16, false, false, true, mpp::tensor_ops::matmul2d_descriptor::mode::multiply_accumulate);
  mpp::tensor_ops::matmul2d<desc, execution_simdgroup> op;
  auto a = op.get_left_input_cooperative_tensor<half, half, float>();
  auto b = op.get_right_input_cooperative_tensor<half, half, float>();
  auto c = op.get_destination_cooperative_tensor<decltype(a), decltype(b), float>();
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    short2 p = nax_position(lane, i);
    a[i] = A[(row0 + p.y) * K + p.x];
    b[i] = B[p.y * N + col0 + p.x];
    b[8 + i] = B[p.y * N + col0 + 16 + p.x];
    c[i] = 0.0f;
    c[8 + i] = 0.0f;
  }
  for (uint k = 0; k < K; k += 16) op.run(a, b, c);
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    short2 p = nax_position(lane, i);
    C[(row0 + p.y) * N + col0 + p.x] = c[i];
    C[(row0 + p.y) * N + col0 + 16 + p.x] = c[8 + i];
  }
}
"""


def gpu_us(stream, launch, reps, warmup_s):
    t0 = time.time()
    while time.time() - t0 < warmup_s:
        launch()
        stream.synchronize()
    stream.take_timings()
    for _ in range(reps):
        launch()
    stream.synchronize()
    t = stream.take_timings()
    return float(np.median([x["gpu_ns"] for x in t])) / 1e3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--warmup-ms", type=float, default=300)
    ap.add_argument("--report")
    args = ap.parse_args()
    n = args.n
    rng = np.random.default_rng(0)
    a = (rng.standard_normal((n, n)) / 8).astype(np.float16)
    b = (rng.standard_normal((n, n)) / 8).astype(np.float16)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "gemm32.metal")
        with open(path, "w") as f:
            f.write(SOURCE)
        libs = {}
        for mode in ("shuffle", "cooperative"):
            os.environ["M2V_SIMDGROUP_MATRIX"] = mode
            lib = m2v.compile_library(path)
            for name in ("gemm32", "gemm32_h2", "mma_only", "nax_mma_only"):
                lib[name].simdgroup_matrix_path  # loads it now, under this mode
                libs[(name, mode)] = lib[name]
    s = m2v.Stream(timestamps=True)
    bufs = [m2v.Buffer(a.nbytes), m2v.Buffer(b.nbytes), m2v.Buffer(n * n * 4)]
    s.upload(bufs[0], a)
    s.upload(bufs[1], b)
    rows = []
    try:
        import torch
        ta, tb = torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()
        want = (ta.float() @ tb.float()).cpu().numpy()
        torch_us = None
        for _ in range(3):
            torch.cuda.synchronize()
            ev = [torch.cuda.Event(enable_timing=True) for _ in range(2)]
            ev[0].record()
            for _ in range(args.reps):
                ta @ tb
            ev[1].record()
            torch.cuda.synchronize()
            us = ev[0].elapsed_time(ev[1]) * 1e3 / args.reps
            torch_us = us if torch_us is None else min(torch_us, us)
        gpu = torch.cuda.get_device_name()
    except ImportError:
        want, torch_us, gpu = a.astype(np.float32) @ b.astype(np.float32), None, "none"
    for (name, mode), k in libs.items():
        os.environ["M2V_SIMDGROUP_MATRIX"] = mode  # a kernel loads again when the mode it was loaded under changes
        groups = (n // 32, n // 16, 1) if name == "nax_mma_only" else (n // 32, n // 32, 1)

        def launch(k=k, groups=groups):
            s.set_kernel(k)
            for i, buf in enumerate(bufs):
                s.set_buffer(buf, i)
            s.set_bytes(np.array([n, n, n], np.uint32), 3)
            s.dispatch_threadgroups(groups, (32, 1, 1))
        us = gpu_us(s, launch, args.reps, args.warmup_ms / 1e3)
        got = s.read(bufs[2], np.float32, (n, n))
        err = float(np.max(np.abs(got - want))) if "mma_only" not in name else None  # timing only
        rows.append({"kernel": name, "path": k.simdgroup_matrix_path, "us": us, "tflops": 2 * n ** 3 / us / 1e6, "max_abs_diff": err,
                     "torch_us": torch_us, "torch_tflops": 2 * n ** 3 / torch_us / 1e6 if torch_us else None})
        print(json.dumps(rows[-1]), flush=True)
    if args.report:
        with open(args.report + ".json", "w") as f:
            json.dump({"device": m2v.device_info()["description"], "torch_gpu": gpu, "n": n, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
