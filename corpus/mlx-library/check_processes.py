#!/usr/bin/env python3
"""--processes N gives the report one process gives: the same cases in the same order, each with the same stage and
error (the inputs come from the seed and the case's name, not from the process that runs it).

Runs run_library.py twice on a few small families, once in one process and once dealt to three, on two simdgroup-matrix
paths (so each process writes one report per path for the parent to merge), and compares the reports.

    check_processes.py [run_library.py's --mlx ...]
"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
FAMILIES = ["arange", "random", "ternary"]
PATHS = ["auto", "shuffle"]


def run(prefix, extra):
    cmd = [sys.executable, os.path.join(HERE, "run_library.py"), "--seed", "7", "--report", prefix] + extra
    for family in FAMILIES:
        cmd += ["--family", family]
    for path in PATHS:
        cmd += ["--matrix-path", path]
    r = subprocess.run(cmd + sys.argv[1:], capture_output=True, text=True, timeout=1200)
    if "SKIP: " in r.stdout:
        print(r.stdout)
        sys.exit(0)
    if r.returncode != 0:
        print(r.stdout, r.stderr, file=sys.stderr)
        sys.exit(f"run_library.py {' '.join(extra)} exited {r.returncode}")
    reports = {}
    for path in PATHS:
        with open(f"{prefix}-{path}.json") as f:
            reports[path] = [(c["case"], c["stage"], c["max_error"]) for c in json.load(f)["cases"]]
    return reports


def main():
    folder = tempfile.mkdtemp(prefix="m2v-processes-")
    one = run(os.path.join(folder, "one"), [])
    three = run(os.path.join(folder, "three"), ["--processes", "3"])
    failures = []
    for path in PATHS:
        if not one[path]:
            failures.append(f"[{path}] the one-process run reported no cases")
        if one[path] != three[path]:
            failures.append(f"[{path}] reports differ:\n  one process:     {one[path]}\n  three processes: {three[path]}")
    for f in failures:
        print("FAIL:", f)
    if not failures:
        print(f"{sum(len(v) for v in one.values())} case runs: the same in one process and in three")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
