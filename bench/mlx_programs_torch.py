#!/usr/bin/env python3
"""The programs of bench/mlx_programs.cpp in PyTorch on the same GPU (CUDA), timed the same way.

    mlx_programs_torch.py [--json FILE]

f16 matmul 4096^3, f32 softmax 8192x8192 (last axis), one forward+backward step of a 2-layer MLP (f32, batch 4096,
4096 -> 4096 -> 4096 relu, mean squared error, gradients of both weights and biases), and the host cost per op of a
chain of 1000 one-element adds. Warm-up 0.5 s, then the median of repeated runs, each ended by
torch.cuda.synchronize() (as mx::eval waits for its result). PyTorch's default precision settings (no TF32 for f32
matmuls: torch.backends.cuda.matmul.allow_tf32 stays False).
"""
import argparse
import json
import time

import torch


def timed(fn, repeats):
    start = time.perf_counter()
    while time.perf_counter() - start < 0.5:
        fn()
        torch.cuda.synchronize()
    ms = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        ms.append((time.perf_counter() - t0) * 1e3)
    ms.sort()
    return ms[len(ms) // 2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    args = ap.parse_args()
    dev = torch.device("cuda")
    torch.manual_seed(0)
    results = []

    n = 4096
    a = torch.randn(n, n, device=dev, dtype=torch.float16)
    b = torch.randn(n, n, device=dev, dtype=torch.float16)
    ms = timed(lambda: a @ b, 20)
    results.append({"name": f"matmul f16 {n}^3", "ms": ms, "rate": 2 * n ** 3 / (ms * 1e-3) / 1e12,
                    "unit": "TFLOP/s"})

    n = 8192
    x = torch.randn(n, n, device=dev)
    ms = timed(lambda: torch.softmax(x, -1), 50)
    results.append({"name": f"softmax f32 {n}x{n}", "ms": ms, "rate": 2 * n * n * 4 / (ms * 1e-3) / 1e9,
                    "unit": "GB/s"})

    batch, width = 4096, 4096
    s = width ** -0.5
    w1 = (torch.randn(width, width, device=dev) * s).requires_grad_()
    b1 = torch.zeros(width, device=dev, requires_grad=True)
    w2 = (torch.randn(width, width, device=dev) * s).requires_grad_()
    b2 = torch.zeros(width, device=dev, requires_grad=True)
    xin = torch.randn(batch, width, device=dev)
    y = torch.randn(batch, width, device=dev)

    def step():
        h = torch.relu(xin @ w1 + b1)
        out = h @ w2 + b2
        loss = ((out - y) ** 2).mean()
        return torch.autograd.grad(loss, [w1, b1, w2, b2]), loss

    ms = timed(step, 10)
    results.append({"name": f"2-layer MLP f32 forward+backward, batch {batch}, width {width}", "ms": ms,
                    "rate": 2 * batch * width * width * 5 / (ms * 1e-3) / 1e12, "unit": "TFLOP/s"})

    z = torch.zeros(1, device=dev)

    def chain():
        t = z
        for _ in range(1000):
            t = t + 1.0
        return t

    ms = timed(chain, 10)
    results.append({"name": "host overhead: chain of 1000 one-element adds, one eval", "ms": ms,
                    "rate": ms * 1e3 / 1000, "unit": "us/op"})

    name = torch.cuda.get_device_name(0)
    print(f"device: {name}, torch {torch.__version__}")
    for r in results:
        print(f"{r['name']:70s} {r['ms']:9.3f} ms  {r['rate']:8.2f} {r['unit']}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": name, "torch": torch.__version__, "programs": results}, f, indent=1)


if __name__ == "__main__":
    main()
