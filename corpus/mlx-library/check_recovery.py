#!/usr/bin/env python3
"""A case over its time budget fails alone, and the cases after it run on the same device.

Runs run_library.py on three cases, the middle one (MLX's longest fft) with a budget of 1 ms, and checks the report:
the first and last match, the middle one fails with a timeout that says how long it had run and that its kernels were
stopped (docs/ABI.md, "Abort word": the device and its memory stay).

    check_recovery.py [run_library.py's --mlx ...]
"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
BEFORE = "arange.arange.f32.100003"
OVER_BUDGET = "fft.fft_bluestein_table.c64.1024x1031"
AFTER = "sort.argsort_block.f32.10x1000.ax1"


def main():
    prefix = os.path.join(tempfile.mkdtemp(prefix="m2v-recovery-"), "run")
    cmd = [sys.executable, os.path.join(HERE, "run_library.py"), "--report", prefix,
           "--budget-scale", f"{OVER_BUDGET}=0.000001"] + sys.argv[1:]
    for name in (BEFORE, OVER_BUDGET, AFTER):
        cmd += ["--filter", name]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=1200)
    print(r.stdout)
    if "SKIP: " in r.stdout:
        return 0
    if r.returncode != 0:
        print(r.stderr, file=sys.stderr)
        return f"run_library.py exited {r.returncode}"
    with open(prefix + ".json") as f:
        stages = {c["case"]: c for c in json.load(f)["cases"]}
    failures = []
    for name in (BEFORE, AFTER):
        if stages.get(name, {}).get("stage") != "matched":
            failures.append(f"{name}: expected matched, got {stages.get(name)}")
    over = stages.get(OVER_BUDGET, {})
    message = over.get("message", "")
    if over.get("stage") != "error" or over.get("cause") != "timeout" or "had run for" not in message or \
            "its kernels were stopped" not in message:
        failures.append(f"{OVER_BUDGET}: expected a timeout saying how long it ran and that it was stopped, got {over}")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
