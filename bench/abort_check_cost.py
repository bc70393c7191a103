#!/usr/bin/env python3
"""What the abort checks (docs/ABI.md, "Abort word") cost MLX's kernels: each operation timed in a process whose
kernels are built with them (the default) and in one built without (M2V_ABORT_CHECKS=0), alternating A B A B so that
clock drift hits both alike. Memory-bound operations (reductions, softmax, normalization, strided copies; an
elementwise add, which has no loop, is the control) and GEMM/GEMV shapes.

    PYTHONPATH=<mlx python package> python3 bench/abort_check_cost.py [--rounds 2] [--reps 30] [--report FILE]

Per operation: the median of --reps evaluations (each mx.eval + synchronize) after 0.5 s of warm-up, then per variant
the best of its rounds; the ratio is with checks / without.
"""
import argparse
import datetime
import json
import os
import subprocess
import sys
import time

CHILD = r'''
import json, statistics, sys, time
import mlx.core as mx

def ops():
    k = mx.random.key(0)
    big = mx.random.normal((64 << 20,), key=k)                      # 256 MB of float32
    rows = mx.random.normal((4096, 8192), key=k)
    t = mx.random.normal((4096, 4096), key=k).T
    w = mx.random.normal((4096,), key=k)
    a16 = mx.random.normal((4096, 4096), key=k).astype(mx.float16)
    b16 = mx.random.normal((4096, 4096), key=k).astype(mx.float16)
    a32 = mx.random.normal((2048, 2048), key=k)
    x1 = mx.random.normal((1, 4096), key=k).astype(mx.float16)
    wt = mx.random.normal((11008, 4096), key=k).astype(mx.float16)
    mx.eval(big, rows, t, w, a16, b16, a32, x1, wt)
    return [
        ("add 64M f32 (no loop: control)", lambda: big + 1.0),
        ("sum 64M f32", lambda: mx.sum(big)),
        ("sum rows 4096x8192 f32", lambda: mx.sum(rows, axis=1)),
        ("softmax 4096x8192 f32", lambda: mx.softmax(rows, axis=-1)),
        ("rms_norm 4096x4096 f32", lambda: mx.fast.rms_norm(t.T, w, 1e-5)),
        ("transpose copy 4096x4096 f32", lambda: mx.contiguous(t)),
        ("matmul 4096^3 f16", lambda: a16 @ b16),
        ("matmul 2048^3 f32", lambda: a32 @ a32),
        ("gemv 1x4096 @ 4096x11008 f16", lambda: x1 @ wt.T),
    ]

reps = int(sys.argv[1])
out = {}
for name, f in ops():
    try:
        start = time.perf_counter()
        while time.perf_counter() - start < 0.5:
            mx.eval(f())
        mx.synchronize()
        times = []
        for _ in range(reps):
            t0 = time.perf_counter()
            mx.eval(f())
            mx.synchronize()
            times.append(time.perf_counter() - t0)
        out[name] = statistics.median(times) * 1e6
    except RuntimeError as e:  # a kernel this device cannot run: reported, not timed
        print("SKIP", name, str(e).splitlines()[0], file=sys.stderr)
print("RESULT " + json.dumps(out))
'''


def run(env_checks, reps):
    env = dict(os.environ)
    if env_checks:
        env.pop("M2V_ABORT_CHECKS", None)
    else:
        env["M2V_ABORT_CHECKS"] = "0"
    r = subprocess.run([sys.executable, "-c", CHILD, str(reps)], capture_output=True, text=True, env=env, timeout=1200)
    for line in r.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    raise SystemExit(f"child failed ({r.returncode}):\n{r.stdout}\n{r.stderr[-3000:]}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--report")
    args = ap.parse_args()
    best = {True: {}, False: {}}
    for _ in range(args.rounds):
        for checks in (True, False):
            for name, us in run(checks, args.reps).items():
                best[checks][name] = min(us, best[checks].get(name, float("inf")))
    rows = [{"op": name, "with_checks_us": best[True][name], "without_us": best[False][name],
             "ratio": best[True][name] / best[False][name]} for name in best[True] if name in best[False]]
    print(f"{'operation':36s} {'with checks':>12s} {'without':>12s} {'ratio':>7s}")
    for r in rows:
        print(f"{r['op']:36s} {r['with_checks_us']:10.1f}us {r['without_us']:10.1f}us {r['ratio']:7.3f}")
    if args.report:
        import mlx.core as mx
        info = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                "device": str(mx.default_device()), "rounds": args.rounds, "reps": args.reps}
        try:
            info["metal_device"] = mx.device_info() if hasattr(mx, "device_info") else mx.metal.device_info()
        except Exception:
            pass
        with open(args.report, "w") as f:
            json.dump({"info": info, "rows": rows}, f, indent=1, default=str)


if __name__ == "__main__":
    main()
