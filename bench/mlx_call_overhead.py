#!/usr/bin/env python3
"""Host-side call overhead of a cached metal2vk.metal_kernel call from Python (tiny kernel, 4 float32 elements).

Run:  PYTHONPATH=build/python /usr/bin/python3 bench/mlx_call_overhead.py [--calls N]
Prints µs per call (median of several batches). The first call compiles (or loads the module from the disk cache);
it is excluded. Each timed call does what an MLX call does end to end here: argument conversion, the kernel-name
lookup, binding (setBytes for the small input), output allocation, one dispatch, the readback and the host wait.
On lavapipe the device work itself is part of the figure (a CPU "GPU"); on a real GPU it is mostly submission
and fence latency.
"""
import argparse
import os
import platform
import statistics
import sys
import time

os.environ.setdefault("LP_NATIVE_VECTOR_WIDTH", "1024")
import numpy as np  # noqa: E402

import metal2vk as m2v  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--batches", type=int, default=5)
    args = ap.parse_args()

    k = m2v.metal_kernel(name="bench_tiny", input_names=["x"], output_names=["y"],
                         source="uint i = thread_position_in_grid.x; y[i] = x[i] + 1.0f;")
    x = np.arange(4, dtype=np.float32)
    call = dict(inputs=[x], grid=(4, 1, 1), threadgroup=(4, 1, 1), output_shapes=[(4,)], output_dtypes=[np.float32])
    (y,) = k(**call)  # compile / load
    assert (y == x + 1).all()
    for _ in range(50):
        k(**call)

    per_call = []
    for _ in range(args.batches):
        t0 = time.perf_counter()
        for _ in range(args.calls):
            k(**call)
        per_call.append((time.perf_counter() - t0) / args.calls * 1e6)
    med = statistics.median(per_call)
    info = m2v.device_info()
    print(f"device: {info['description']}")
    print(f"host: {platform.processor() or platform.machine()}, python {platform.python_version()}, "
          f"numpy {np.__version__}")
    print(f"batches (us/call): {', '.join(f'{v:.1f}' for v in per_call)}")
    print(f"metal_kernel cached call overhead: {med:.1f} us/call (median of {args.batches} x {args.calls} calls)")


if __name__ == "__main__":
    sys.exit(main())
