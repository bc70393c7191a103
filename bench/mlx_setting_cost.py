#!/usr/bin/env python3
"""What a setting of metal2vk costs MLX's operations: each operation timed in a process with the setting (B) and in
one without (A), alternating A B A B so that clock drift hits both alike. Memory-bound operations (reductions,
softmax, normalization, strided copies; an elementwise add, which has no loop or simdgroup function, is the control),
4-bit qmv and GEMM/GEMV shapes. Settings:
  abort-checks  A: loops check the abort word (the default, docs/ABI.md "Abort word"); B: M2V_ABORT_CHECKS=0
  simdgroups    A: M2V_SIMDGROUPS=native (32-wide subgroups); B: M2V_SIMDGROUPS=emulated (docs/ABI.md "Subgroups")

    PYTHONPATH=<mlx python package> python3 bench/mlx_setting_cost.py --setting S [--rounds 2] [--reps 30]
        [--report FILE]

Per operation: the median of --reps evaluations (each mx.eval + synchronize) after 0.5 s of warm-up, then per variant
the best of its rounds; the ratio is A / B for abort-checks (the checks' cost) and B / A for simdgroups (the
emulation's slowdown).
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
    wq, scales, biases = mx.quantize(wt, group_size=64, bits=4)
    mx.eval(big, rows, t, w, a16, b16, a32, x1, wt, wq, scales, biases)
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
        ("qmv 4-bit 1x4096 @ 4096x11008 f16",
         lambda: mx.quantized_matmul(x1, wq, scales, biases, transpose=True, group_size=64, bits=4)),
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


SETTINGS = {  # setting: (environment of A, of B, whether the ratio is B / A)
    "abort-checks": ({"M2V_ABORT_CHECKS": None}, {"M2V_ABORT_CHECKS": "0"}, False),
    "simdgroups": ({"M2V_SIMDGROUPS": "native"}, {"M2V_SIMDGROUPS": "emulated"}, True),
}


def run(variables, reps):
    env = dict(os.environ)
    for name, value in variables.items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    r = subprocess.run([sys.executable, "-c", CHILD, str(reps)], capture_output=True, text=True, env=env, timeout=1200)
    for line in r.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    raise SystemExit(f"child failed ({r.returncode}):\n{r.stdout}\n{r.stderr[-3000:]}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--setting", choices=sorted(SETTINGS), required=True)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--report")
    args = ap.parse_args()
    envA, envB, slowdown = SETTINGS[args.setting]
    best = {"A": {}, "B": {}}
    for _ in range(args.rounds):
        for variant, variables in (("A", envA), ("B", envB)):
            for name, us in run(variables, args.reps).items():
                best[variant][name] = min(us, best[variant].get(name, float("inf")))
    rows = []
    for name in best["A"]:
        if name in best["B"]:
            a, b = best["A"][name], best["B"][name]
            rows.append({"op": name, "a_us": a, "b_us": b, "ratio": b / a if slowdown else a / b})
    print(f"setting {args.setting}: A {envA}, B {envB}; ratio {'B / A' if slowdown else 'A / B'}")
    print(f"{'operation':36s} {'A':>12s} {'B':>12s} {'ratio':>7s}")
    for r in rows:
        print(f"{r['op']:36s} {r['a_us']:10.1f}us {r['b_us']:10.1f}us {r['ratio']:7.3f}")
    if args.report:
        import mlx.core as mx
        info = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                "device": str(mx.default_device()), "setting": args.setting, "a": envA, "b": envB,
                "rounds": args.rounds, "reps": args.reps}
        try:
            info["metal_device"] = mx.device_info() if hasattr(mx, "device_info") else mx.metal.device_info()
        except Exception:
            pass
        with open(args.report, "w") as f:
            json.dump({"info": info, "rows": rows}, f, indent=1, default=str)


if __name__ == "__main__":
    main()
