#!/usr/bin/env python3
"""uzu's kernel library compiled as uzu's build compiles it: each .metal file whole, with the wrappers of its DSL
kernels appended (uzu_dsl.py), by `m2v compile -std=metal4.0` with uzu's generated/ headers on the include path.
Reports, per file, the entry points its wrappers declare and the valid SPIR-V modules made of them, and groups the
failures by their first error.

    python3 corpus/uzu/sweep.py --m2v build/tools/m2v/m2v [--uzu ../shared/third_party/uzu] [--exclude FILE]...
        [-j N] [--timeout S] [--report PREFIX] [--floor FILE]

--floor FILE: lines `FILE COUNT`; fails (exit 1) when a listed file makes fewer valid modules than COUNT. Prints
`SKIP: ...` and exits 0 when uzu's kernels are not there.
"""
import argparse
import collections
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import uzu_dsl  # noqa: E402

KERNEL_SUBDIR = "crates/backend-uzu/src/backends/metal/kernel"


def first_error(log, kernel_dir):
    """The first error of a compile log, without the paths and line numbers that differ between files."""
    for line in log.splitlines():
        if "error:" in line:
            message = line.split("error:", 1)[1].strip()
            return re.sub(r"'[^']*/", "'", message.replace(kernel_dir + "/", ""))
    for line in log.splitlines():
        if line.strip():
            return line.strip()[:200]
    return "no output"


def valid_modules(out_dir):
    """Entry points with a module (the cooperative-matrix and native-bfloat16 builds beside one are not counted)."""
    if not os.path.isdir(out_dir):
        return []
    return sorted(f[:-4] for f in os.listdir(out_dir)
                  if f.endswith(".spv") and ".cooperative." not in f and ".native-bfloat16." not in f)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--m2v", required=True)
    ap.add_argument("--uzu", default=os.path.join(here, "..", "..", "..", "shared", "third_party", "uzu"))
    ap.add_argument("--exclude", action="append", default=[], help="a file (relative to the kernel folder) to skip")
    ap.add_argument("-j", type=int, default=os.cpu_count() or 1, help="entry points compiled at a time")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds per file")
    ap.add_argument("--report", help="PREFIX: writes PREFIX.md and PREFIX.json")
    ap.add_argument("--floor", help="lines `FILE COUNT`: fewer valid modules than COUNT fails")
    args = ap.parse_args()

    source_dir = os.path.join(args.uzu, KERNEL_SUBDIR)
    if not os.path.isdir(source_dir):
        print("SKIP: uzu's kernels are not at %s" % source_dir)
        return 0
    work = tempfile.mkdtemp(prefix="m2v-uzu-")
    kernel_dir = os.path.join(work, "kernel")
    shutil.copytree(source_dir, kernel_dir)
    enums = uzu_dsl.enum_like_types(kernel_dir)
    for root, _, names in os.walk(kernel_dir):
        for f in names:
            if f.endswith(".h"):
                uzu_dsl.INTEGER_DEFINES.update(uzu_dsl.integer_defines(open(os.path.join(root, f)).read()))

    rows, started = [], time.time()
    for rel in uzu_dsl.metal_files(kernel_dir):
        if rel in args.exclude:
            continue
        path = os.path.join(kernel_dir, rel)
        source = open(path).read()
        uzu_dsl.INTEGER_DEFINES.update(uzu_dsl.integer_defines(source))
        kernels = uzu_dsl.kernels_of(source)
        entries = uzu_dsl.entry_names(kernels)
        with open(path, "w") as f:
            f.write(source + "\n" + uzu_dsl.footer(kernels, enums))
        out_dir = os.path.join(work, "out", rel.replace("/", "_"))
        t0 = time.time()
        try:
            p = subprocess.run([args.m2v, "compile", path, "-std=metal4.0", "-I", os.path.join(kernel_dir, "generated"),
                                "-o", out_dir, "-j", str(args.j)], capture_output=True, text=True,
                               timeout=args.timeout)
            log, status = p.stdout + p.stderr, p.returncode
        except subprocess.TimeoutExpired:
            log, status = "timed out after %g s" % args.timeout, "timeout"
        made = [m for m in valid_modules(out_dir) if m in set(entries)]
        cause = "" if len(made) == len(entries) else first_error(log, kernel_dir)
        if isinstance(status, int) and status < 0:
            cause = "signal %d: %s" % (-status, cause)
        rows.append({"file": rel, "entries": len(entries), "valid": len(made), "seconds": round(time.time() - t0, 1),
                     "exit": status, "cause": cause})
        print("%4d/%-4d %6.1fs %s%s" % (len(made), len(entries), rows[-1]["seconds"], rel,
                                       "  -- " + cause if cause else ""), flush=True)
    shutil.rmtree(work, ignore_errors=True)

    total = sum(r["entries"] for r in rows)
    valid = sum(r["valid"] for r in rows)
    causes = collections.Counter()
    for r in rows:
        if r["cause"]:
            causes[r["cause"]] += r["entries"] - r["valid"]
    print("uzu: %d of %d entry points valid in %d files (%.0f s)" % (valid, total, len(rows), time.time() - started))
    for cause, n in causes.most_common():
        print("  %5d  %s" % (n, cause))

    if args.report:
        with open(args.report + ".json", "w") as f:
            json.dump({"valid": valid, "entries": total, "files": rows}, f, indent=1)
        with open(args.report + ".md", "w") as f:
            f.write("# uzu's kernels, each file compiled whole with its DSL wrappers\n\n")
            f.write("%d of %d entry points valid in %d files.\n\n" % (valid, total, len(rows)))
            f.write("| entry points lost | first error |\n|---:|---|\n")
            for cause, n in causes.most_common():
                f.write("| %d | %s |\n" % (n, cause.replace("|", "\\|")))
            f.write("\n| file | valid | entry points | seconds | first error |\n|---|---:|---:|---:|---|\n")
            for r in rows:
                f.write("| %s | %d | %d | %s | %s |\n" % (r["file"], r["valid"], r["entries"], r["seconds"],
                                                        r["cause"].replace("|", "\\|")))

    failed = [r for r in rows if r["exit"] == "timeout" or (isinstance(r["exit"], int) and r["exit"] < 0)]
    for r in failed:
        print("FAIL: %s: %s" % (r["file"], r["cause"]))
    if args.floor:
        by_file = {r["file"]: r["valid"] for r in rows}
        for line in open(args.floor):
            line = line.split("#")[0].split()
            if len(line) == 2 and line[0] in by_file and by_file[line[0]] < int(line[1]):
                print("FAIL: %s: %d valid modules, the floor is %s" % (line[0], by_file[line[0]], line[1]))
                failed.append(line)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
