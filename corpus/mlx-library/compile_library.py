#!/usr/bin/env python3
"""Compiles MLX's Metal kernel library with `m2v compile`, the way MLX's build compiles it, and reports per file.

Every entry point of the library's entry_points.tsv is expected as a validated module (m2v writes a module only
after in-process SPIR-V validation), the Metal-4 files (`nax`: MetalPerformancePrimitives' matmul2d) included; the
summary also counts those separately. Whatever the input, m2v must exit with 0, 1 or 3: never a signal, an internal
error or a timeout.

    compile_library.py [--mlx ROOT] [--m2v PATH] [--sample K] [--nax-sample K] [--floor FILE] [--report PREFIX] [-j N]
                       [--filter SUBSTR] [--exclude SUBSTR]...

--sample K compiles every file, but of a file with more than 40 entry points only every K-th entry (the first
included): the fixed sample CI runs. --floor FILE fails (exit 1) when fewer valid modules come out than the number
the file records for this sample; the number is exact, so an improvement shows up as a floor to raise.
The library's path defaults to $M2V_MLX_ROOT, else ../shared/third_party/mlx beside the repository.
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

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
MLX_FLAGS = ["-x", "metal", "-Wall", "-Wextra", "-fno-fast-math", "-Wno-c++17-extensions", "-Wno-c++20-extensions"]
SMALL_FILE = 40  # entries; files up to this size are compiled whole even when sampling
OK_EXIT = {0, 1, 3}


def read_entries(mlx):
    files = collections.OrderedDict()
    with open(os.path.join(mlx, "entry_points.tsv")) as f:
        next(f)
        for line in f:
            parts = line.rstrip("\n").split("\t")
            path, entry, nax = parts[0], parts[1], len(parts) > 3 and parts[3] == "nax"
            files.setdefault(path, {"entries": [], "nax": nax})["entries"].append(entry)
    return files


def sample(entries, k, nax=False):
    """Every k-th entry (the first included); all of a small file's, except in the Metal-4 files, whose entries
    take 5-50 s each to compile (their kernels unroll whole 16x16 tile multiplies)."""
    if k <= 1 or (len(entries) <= SMALL_FILE and not nax):
        return list(entries)
    return entries[::k]


def first_diagnostics(stderr):
    """Per kernel, the first error that names it; and the first error of the file."""
    per_kernel, first = {}, None
    for line in stderr.splitlines():
        m = re.search(r"(internal error|error: unsupported|error): (.*)", line)
        if not m:
            continue
        text = m.group(2)
        k = re.match(r"in kernel '([^']*)': (.*)", text)
        if k:
            per_kernel.setdefault(k.group(1), k.group(2).split("\n")[0])
        elif first is None:
            first = line.strip()
    return per_kernel, first


def cause_of(message):
    """A message without its specifics, for grouping."""
    message = re.sub(r"'[^']*'", "'…'", message)
    message = re.sub(r"\d+", "N", message)
    return message[:160]


def compile_file(m2v, mlx, path, entries, jobs, timeout):
    out = tempfile.mkdtemp(prefix="m2v-mlx-")
    cmd = [m2v, "compile", os.path.join(mlx, path), "-I", mlx, *MLX_FLAGS, "-o", out, "-j", str(jobs)]
    for e in entries:
        cmd += ["--entry", e]
    start = time.time()
    # (waited for with wait4, which gives the process's peak memory)
    with tempfile.TemporaryFile() as err:
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err)
        rc, peak_kb = None, 0
        while rc is None:
            pid, status, usage = os.wait4(p.pid, os.WNOHANG)
            if pid:
                rc, peak_kb = os.waitstatus_to_exitcode(status), usage.ru_maxrss
            elif time.time() - start > timeout:
                p.kill()
                os.wait4(p.pid, 0)
                rc = "timeout"
            else:
                time.sleep(0.05)
        p.returncode = 0  # reaped above
        err.seek(0)
        stderr = err.read().decode(errors="replace")
    seconds = time.time() - start
    produced = set()
    for name in os.listdir(out):
        if name.endswith(".json"):
            with open(os.path.join(out, name)) as f:
                produced.add(json.load(f)["entry"])
    shutil.rmtree(out, ignore_errors=True)
    return rc, stderr, seconds, produced, peak_kb


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mlx", default=os.environ.get("M2V_MLX_ROOT",
                                                    os.path.join(os.path.dirname(REPO), "shared", "third_party", "mlx")))
    ap.add_argument("--m2v", default=os.path.join(REPO, "build", "tools", "m2v", "m2v"))
    ap.add_argument("--sample", type=int, default=1)
    ap.add_argument("--nax-sample", type=int, help="the sample step of the Metal-4 files (default: --sample)")
    ap.add_argument("--floor")
    ap.add_argument("--report")
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--timeout", type=int, help="seconds per file (default: an hour, or 10 s per selected entry point "
                    "when that is more: quantized_nax.metal's 864 took 3,810 s on 2 busy cores)")
    ap.add_argument("--filter", default="", help="only files whose path contains this")
    ap.add_argument("--exclude", action="append", default=[], metavar="SUBSTR",
                    help="leave out the files whose path contains SUBSTR (to split the library between machines)")
    args = ap.parse_args()

    if not os.path.isfile(os.path.join(args.mlx, "entry_points.tsv")):
        print(f"SKIP: no MLX kernel library at {args.mlx} (set --mlx or M2V_MLX_ROOT)")
        return 0
    files = read_entries(args.mlx)
    rows, failures, bad_exits = [], [], []
    totals = collections.Counter()
    for path, info in files.items():
        if args.filter not in path or any(x in path for x in args.exclude):
            continue
        wanted = sample(info["entries"], (args.nax_sample or args.sample) if info["nax"] else args.sample, info["nax"])
        timeout = args.timeout or max(3600, 10 * len(wanted))
        rc, stderr, seconds, produced, peak_kb = compile_file(args.m2v, args.mlx, path, wanted, args.jobs, timeout)
        totals["peak_kb"] = max(totals["peak_kb"], peak_kb)
        if rc not in OK_EXIT:
            bad_exits.append((path, rc, stderr.strip().splitlines()[-1:] if stderr.strip() else []))
        per_kernel, first = first_diagnostics(stderr)
        valid = [e for e in wanted if e in produced]
        failed = [e for e in wanted if e not in produced]
        if info["nax"]:
            totals["nax"] += len(wanted)
            totals["nax_valid"] += len(valid)
        totals["selected"] += len(wanted)
        totals["valid"] += len(valid)
        totals["seconds"] += seconds
        for e in failed:
            failures.append((path, e, per_kernel.get(e) or first or f"no module (exit {rc})"))
        rows.append((path, len(wanted), len(valid), len(failed), seconds, rc, info["nax"], first, peak_kb))
        print(f"{path}: {len(valid)}/{len(wanted)} valid, {seconds:.1f} s, {peak_kb / 1024:.0f} MiB, exit {rc}",
              flush=True)

    total = totals["selected"]
    rate = totals["valid"] / total * 100 if total else 0.0
    nax_step = f" (Metal-4 files {args.nax_sample})" if args.nax_sample else ""
    summary = (f"{totals['valid']} of {total} entry points valid ({rate:.1f}%), sample {args.sample}{nax_step}, "
               f"{totals['seconds']:.0f} s, {total / max(totals['seconds'], 1e-9):.1f} entry points/s, "
               f"peak memory of one process {totals['peak_kb'] / 1024:.0f} MiB; of them Metal-4 (NAX) files "
               f"{totals['nax_valid']} of {totals['nax']}")
    print(summary)

    if args.report:
        causes = collections.defaultdict(list)
        for path, e, msg in failures:
            causes[cause_of(msg)].append((path, e, msg))
        with open(args.report + ".md", "w") as f:
            f.write("# MLX kernel library: compile report\n\n")
            nax_arg = f" --nax-sample {args.nax_sample}" if args.nax_sample else ""
            nax_arg += f" --filter {args.filter}" if args.filter else ""
            nax_arg += "".join(f" --exclude {x}" for x in args.exclude)
            f.write(f"`corpus/mlx-library/compile_library.py --sample {args.sample}{nax_arg}` (m2v compile with MLX's "
                    f"flags, -j {args.jobs}). {summary}.\n\n")
            f.write("| file | entry points | valid | failed | seconds | peak MiB | exit |\n"
                    "|---|---|---|---|---|---|---|\n")
            for path, n, v, fl, sec, rc, nax, first, peak in rows:
                note = " (Metal 4)" if nax else ""
                f.write(f"| {path.replace('mlx/backend/metal/kernels/', '')}{note} | {n} | {v} | {fl} | "
                        f"{sec:.1f} | {peak / 1024:.0f} | {rc} |\n")
            f.write("\n## Failures by cause\n\n")
            if not causes:
                f.write("None.\n")
            for cause, items in sorted(causes.items(), key=lambda c: -len(c[1])):
                f.write(f"### {len(items)} × {cause}\n\n")
                for path, e, msg in items[:5]:
                    f.write(f"- `{e}` ({os.path.basename(path)}): {msg}\n")
                if len(items) > 5:
                    f.write(f"- … and {len(items) - 5} more\n")
                f.write("\n")

    status = 0
    for path, rc, tail in bad_exits:
        print(f"FAIL: {path}: exit {rc} (allowed: 0, 1, 3) {' '.join(tail)}")
        status = 1
    if args.floor:
        floors = {}
        with open(args.floor) as f:
            for line in f:
                m = re.match(r"\s*sample\s+(\d+)\s*:\s*(\d+)", line)
                if m:
                    floors[int(m.group(1))] = int(m.group(2))
        want = floors.get(args.sample)
        if want is None:
            print(f"FAIL: {args.floor} has no floor for sample {args.sample}")
            status = 1
        elif totals["valid"] < want:
            print(f"FAIL: {totals['valid']} valid modules, below the floor of {want}")
            status = 1
        elif totals["valid"] > want:
            print(f"NOTE: {totals['valid']} valid modules, above the floor of {want}: raise it in {args.floor}")
    return status


if __name__ == "__main__":
    sys.exit(main())
