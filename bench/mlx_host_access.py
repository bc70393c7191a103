#!/usr/bin/env python3
"""How fast the CPU reaches MLX arrays that live on the GPU: GPU -> NumPy, NumPy -> GPU, .tolist(), and CPU-stream
operations (sum, matmul, mx.linalg.inv) on a GPU result, each beside the same work done by NumPy on host memory in
the same process (a plain memcpy for the copies).

    PYTHONPATH=<mlx python package> python3 bench/mlx_host_access.py [--mb 1,16,64,256] [--reps 3] [--report FILE]

Run it twice to compare shared-memory placements: M2V_HOST_MIRROR=0 (shared buffers in the PCIe BAR, read uncached
by the CPU) and the default (host-cached mirrors on devices that need them, metal/host_mirror.cpp). Times are the
best of --reps; every GPU result is computed afresh before each timed read, so that a read always follows GPU writes.
"""
import argparse
import datetime
import json
import os
import time

import numpy as np


def best(reps, prepare, work):
    times = []
    for _ in range(reps):
        state = prepare()
        t0 = time.perf_counter()
        work(state)
        times.append(time.perf_counter() - t0)
    return min(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", default="1,16,64,256")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--report")
    args = ap.parse_args()
    import mlx.core as mx

    info = mx.metal.device_info() if hasattr(mx, "metal") else {}
    rows = []
    for mb in [int(x) for x in args.mb.split(",")]:
        n = mb * (1 << 20) // 4
        host = np.random.default_rng(0).standard_normal(n, dtype=np.float32)
        nbytes = host.nbytes

        def gpu_result():
            a = mx.array(host) * 2.0  # written by a GPU kernel
            mx.eval(a)
            return a

        row = {"MB": mb}
        row["gpu_to_numpy_GBs"] = nbytes / best(args.reps, gpu_result, lambda a: np.array(a, copy=True)) / 1e9
        row["numpy_copy_GBs"] = nbytes / best(args.reps, lambda: host, lambda h: h.copy()) / 1e9
        row["numpy_to_gpu_GBs"] = nbytes / best(args.reps, lambda: host, lambda h: mx.eval(mx.array(h))) / 1e9
        if mb <= 16:
            row["tolist_s"] = best(args.reps, gpu_result, lambda a: a.tolist())
            row["numpy_tolist_s"] = best(args.reps, lambda: host, lambda h: h.tolist())
        with mx.stream(mx.cpu):
            row["cpu_sum_s"] = best(args.reps, gpu_result, lambda a: mx.eval(mx.sum(a)))
        row["numpy_sum_s"] = best(args.reps, lambda: host, lambda h: h.sum())
        side = int((n // 2) ** 0.5) // 64 * 64 or 64  # two square matrices in the same bytes
        if mb <= 64:
            def gpu_square():
                m = mx.array(host[: side * side].reshape(side, side)) * 1.0
                mx.eval(m)
                return m
            with mx.stream(mx.cpu):
                row["cpu_matmul_s"] = best(args.reps, gpu_square, lambda m: mx.eval(m @ m))
            sq = host[: side * side].reshape(side, side)
            row["numpy_matmul_s"] = best(args.reps, lambda: sq, lambda m: m @ m)
            row["matmul_side"] = side
        if mb <= 16:
            k = min(side, 1024)

            def gpu_inv_input():
                m = mx.array(host[: k * k].reshape(k, k)) + mx.eye(k) * k
                mx.eval(m)
                return m
            with mx.stream(mx.cpu):
                row["cpu_inv_s"] = best(args.reps, gpu_inv_input, lambda m: mx.eval(mx.linalg.inv(m)))
            ref = host[: k * k].reshape(k, k) + np.eye(k, dtype=np.float32) * k
            row["numpy_inv_s"] = best(args.reps, lambda: ref, np.linalg.inv)
            row["inv_side"] = k
        print(json.dumps(row), flush=True)
        rows.append(row)
    if args.report:
        with open(args.report, "w") as f:
            json.dump({"date": datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M UTC"),
                       "device": info.get("device_name", ""), "M2V_HOST_MIRROR": os.environ.get("M2V_HOST_MIRROR", ""),
                       "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
