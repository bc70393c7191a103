#!/usr/bin/env python3
"""Runs MLX's kernel library as MLX launches it, on the default Vulkan device, against numpy references.

    run_library.py [--mlx ROOT] [--filter SUBSTR]... [--exclude SUBSTR]... [--family NAME]... [--exclude-family NAME]...
                   [--seed S]
                   [--report PREFIX] [--floor FILE] [-j N] [--matrix-path MODE]... [--warm-jobs N]
                   [--processes N] [--shard K/N] [--list]

Cases live in cases/*.py (see mlxrun.py). Each case ends in one stage: `compile` (an entry point did not compile),
`refused` (the device cannot run it, e.g. 32-wide simdgroups on lavapipe), `error` (a runtime or harness error),
`ran` (output differs from the reference, or a validation-layer message), `matched`. --report writes PREFIX.md and
PREFIX.json (stage, cause, message, GPU time, max error per case). --floor FILE exits 1 when a case it lists does not
match. The seed (printed) reproduces the inputs; each case draws from hash(seed, case name).
--matrix-path MODE (auto, shuffle, cooperative; M2V_SIMDGROUP_MATRIX) given more than once runs every case once per
path, compiled once; each path's report is PREFIX-MODE and --floor applies to each.
--warm-jobs N first runs every case once on N threads, each with its own stream, and discards those results, so that
the driver can build the cases' pipelines side by side (seconds each for MLX's NAX kernels) and the reported pass, one
case at a time as always, finds them built. Not yet shown to pay: on the H200 16 threads did not finish the 66 NAX
cases' warm pass in 355 s, about what one thread would take (bench/membound-round5.md says what to check).
--processes N deals the cases to N processes of this script (--shard K/N: cases K, K+N, ...), each compiling its own
cases' entry points with -j/N jobs and building its own pipelines, and merges their reports: the way to have the
driver build many large pipelines side by side.
A case waits the device's budget (seconds on a GPU, minutes on a CPU device; cases known to be long have a multiple,
--budget-scale overrides it) before it counts as hung; a timeout or a lost device fails that case alone: its kernels
are stopped (docs/ABI.md, "Abort word") and the cases after it run on the same device, or, where they could not be
stopped or the device was lost, on a new one.
MLX's library: --mlx, else $M2V_MLX_ROOT, else ../shared/third_party/mlx beside the repository.
"""
import argparse
import collections
import concurrent.futures
import copy
import hashlib
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import mlxrun  # noqa: E402
import metal2vk as m2v  # noqa: E402

STAGES = ["compile", "refused", "error", "ran", "matched"]


def load_cases():
    cases = []
    folder = os.path.join(HERE, "cases")
    for fname in sorted(os.listdir(folder)):
        if not fname.endswith(".py") or fname.startswith("_"):
            continue
        spec = importlib.util.spec_from_file_location("cases_" + fname[:-3], os.path.join(folder, fname))
        mod = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(mod)
            cases.extend(mod.cases())
        except Exception as e:  # one broken case file must not hide the others' results
            cases.append(broken_file_case(fname, e))
    names = collections.Counter(c.name for c in cases)
    dup = [n for n, k in names.items() if k > 1]
    if dup:
        sys.exit(f"duplicate case names: {dup[:5]}")
    return cases


def broken_file_case(fname, error):
    def run(ctx):
        raise RuntimeError(f"cases/{fname} did not load: {type(error).__name__}: {error}")

    return mlxrun.Case(f"{fname[:-3]}.load", fname[:-3], "", [], run)


def case_seed(seed, name):
    return int.from_bytes(hashlib.sha256(f"{seed}:{name}".encode()).digest()[:8], "little")


def result_row(r):
    return {"case": r.case.name, "family": r.case.family, "file": r.case.file, "kernels": r.case.kernels,
            "stage": r.stage, "cause": r.cause, "message": r.message, "gpu_us": r.gpu_us,
            "max_error": r.max_error, "dispatches": r.dispatches, "simdgroup_matrix": r.matrix_path,
            "note": r.case.note}


def write_report(prefix, rows, device, seed, elapsed, matrix_path):
    counts = collections.Counter(r["stage"] for r in rows)
    with open(prefix + ".json", "w") as f:
        json.dump({"device": device, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                   "simdgroup_matrix": matrix_path, "seed": seed,
                   "seconds": round(elapsed, 1), "counts": counts, "cases": rows}, f, indent=1)
    fams = collections.OrderedDict()
    for r in rows:
        fams.setdefault(r["family"], collections.Counter())[r["stage"]] += 1
    with open(prefix + ".md", "w") as f:
        f.write(f"# MLX's kernel library, run as MLX launches it\n\n")
        f.write(f"Device: {device}. {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}. "
                f"M2V_SIMDGROUP_MATRIX={matrix_path}. Seed {seed}. "
                f"{len(rows)} cases in {elapsed:.0f} s.\n\n")
        f.write("| stage | cases |\n|---|---|\n")
        for s in STAGES:
            f.write(f"| {s} | {counts.get(s, 0)} |\n")
        f.write("\n## Per family\n\n| family | " + " | ".join(STAGES) + " |\n|---|" + "---|" * len(STAGES) + "\n")
        for fam, c in fams.items():
            f.write(f"| {fam} | " + " | ".join(str(c.get(s, 0)) for s in STAGES) + " |\n")
        causes = collections.OrderedDict()
        for r in rows:
            if r["stage"] != "matched":
                causes.setdefault(r["cause"], []).append(r)
        if causes:
            f.write("\n## Not matched, by cause\n")
            for cause, rs in causes.items():
                f.write(f"\n### {cause} ({len(rs)})\n\n")
                for r in rs:
                    f.write(f"- `{r['case']}`: {r['message']}\n")
        f.write("\n## Cases\n\n| case | kernels | stage | GPU µs | max error | dispatches |\n|---|---|---|---|---|---|\n")
        for r in rows:
            gpu = f"{r['gpu_us']:.1f}" if r["gpu_us"] is not None else ""
            err = f"{r['max_error']:.2g}" if r["max_error"] is not None else ""
            kern = ", ".join(f"`{k}`" for k in r["kernels"][:3]) + (" …" if len(r["kernels"]) > 3 else "")
            f.write(f"| {r['case']} | {kern} | {r['stage']} | {gpu} | {err} | {r['dispatches']} |\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mlx", default=os.environ.get("M2V_MLX_ROOT") or os.path.join(
        os.path.dirname(os.path.dirname(HERE)), "..", "shared", "third_party", "mlx"))
    ap.add_argument("--filter", action="append", default=[], help="run cases whose name contains SUBSTR")
    ap.add_argument("--exclude", action="append", default=[], metavar="SUBSTR",
                    help="leave out the cases whose name contains SUBSTR")
    ap.add_argument("--family", action="append", default=[])
    ap.add_argument("--exclude-family", action="append", default=[], metavar="NAME",
                    help="leave out the cases of family NAME (the lavapipe ctest leaves out the NAX families: "
                         "refused there, and minutes to compile)")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--report")
    ap.add_argument("--floor")
    ap.add_argument("-j", "--jobs", type=int, default=0)
    ap.add_argument("--list", action="store_true", help="list the cases and exit")
    ap.add_argument("--matrix-path", action="append", default=[], choices=["auto", "shuffle", "cooperative"],
                    help="run every case on this simdgroup-matrix path (M2V_SIMDGROUP_MATRIX); repeat for several")
    ap.add_argument("--warm-jobs", type=int, default=0, metavar="N",
                    help="build the pipelines first: run the cases once on N threads, results discarded")
    ap.add_argument("--processes", type=int, default=1, metavar="N",
                    help="run the cases in N processes side by side and merge their reports")
    ap.add_argument("--shard", metavar="K/N", help="run only the cases K, K+N, K+2N, ... (what --processes gives "
                                                   "each process)")
    ap.add_argument("--budget-scale", action="append", default=[], metavar="CASE=SCALE",
                    help="wait SCALE times the device's budget for CASE before it counts as hung (default: the "
                         "case's own, 1 for most)")
    args = ap.parse_args()

    cases = load_cases()
    if args.filter:
        cases = [c for c in cases if any(f in c.name for f in args.filter)]
    if args.exclude:
        cases = [c for c in cases if not any(f in c.name for f in args.exclude)]
    if args.family:
        cases = [c for c in cases if c.family in args.family]
    if args.exclude_family:
        cases = [c for c in cases if c.family not in args.exclude_family]
    for spec in args.budget_scale:
        name, _, scale = spec.partition("=")
        matching = [c for c in cases if c.name == name]
        if not matching or not scale:
            sys.exit(f"--budget-scale {spec}: no such case, or no scale")
        for c in matching:
            c.budget_scale = float(scale)
    if args.shard:
        k, _, n = args.shard.partition("/")
        cases = cases[int(k)::int(n)]
    if args.list:
        for c in cases:
            print(f"{c.name}\t{c.file}\t{','.join(c.kernels)}")
        return 0
    if not os.path.isdir(os.path.join(args.mlx, "mlx", "backend", "metal", "kernels")):
        print(f"SKIP: MLX's kernel library not found at {args.mlx} (--mlx or M2V_MLX_ROOT)")
        return 0

    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(4), "little")
    device = m2v.device_info()["description"]
    print(f"{device}; seed {seed}; {len(cases)} cases" + (f" (shard {args.shard})" if args.shard else ""),
          file=sys.stderr)
    paths = args.matrix_path or [os.environ.get("M2V_SIMDGROUP_MATRIX") or "auto"]
    if args.processes > 1:
        stop_on_sigterm()
        return run_in_processes(args, cases, paths, seed, device)
    t0 = time.time()
    runner = mlxrun.Runner(os.path.abspath(args.mlx), jobs=args.jobs)
    runner.compile(cases)
    compile_s = time.time() - t0
    runner.stream = m2v.Stream(timestamps=True)
    stop_on_sigterm()
    below = []
    for path in paths:
        os.environ["M2V_SIMDGROUP_MATRIX"] = path  # read when each kernel is (re)loaded
        if args.warm_jobs > 1:
            warm_pipelines(runner, cases, seed, args.warm_jobs)
            runner.stream = m2v.Stream(timestamps=True)  # on the device a fault in the warm pass replaced, if any
        # A process of --processes writes its report after every case: one its parent has to kill (stuck in a
        # driver's pipeline build past the run's time) still leaves the cases it finished.
        report_so_far = (lambda results, t, path=path: write_report(
            path_report(args.report, paths, path), [result_row(r) for r in results], device, seed,
            time.time() - t + compile_s, path)) if args.shard and args.report else None
        results, elapsed, interrupted = run_cases(runner, cases, seed, path_label(paths, path), report_so_far)
        below += conclude(args, [result_row(r) for r in results], paths, path, device, seed, elapsed + compile_s)
        if interrupted:
            break
    return 1 if below else 0


def path_label(paths, path):
    """The path's name in printed lines, floor messages and report names: only when the run has several paths."""
    return path if len(paths) > 1 else None


def path_report(prefix, paths, path):
    """Where one path's report goes: PREFIX, or PREFIX-PATH when the run has several paths."""
    label = path_label(paths, path)
    return prefix + (f"-{label}" if label else "")


def stop_on_sigterm():
    """A run stopped from outside (timeout's SIGTERM, Ctrl-C) still writes the report of the cases it finished."""
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))


def conclude(args, rows, paths, path, device, seed, elapsed):
    """Prints one path's counts, writes its report, returns its cases below the floor."""
    counts = collections.Counter(r["stage"] for r in rows)
    label = path_label(paths, path)
    print((f"[{label}] " if label else "") + "; ".join(f"{s} {counts.get(s, 0)}" for s in STAGES) +
          f"  ({elapsed:.0f} s, seed {seed})")
    if args.report:
        write_report(path_report(args.report, paths, path), rows, device, seed, elapsed, path)
    return below_floor(args.floor, rows, label) if args.floor else []


def run_in_processes(args, cases, paths, seed, device):
    """--processes N: deals the cases to N processes of this script, each compiling its own cases' entry points and
    building its own pipelines (a driver builds pipelines side by side across processes; see --warm-jobs for threads),
    then merges their reports in the cases' order. Each process rewrites its report after every case, so one that
    dies or is killed leaves the cases it finished; the others count as not reached, and the exit status is 1."""
    n = min(args.processes, len(cases))
    tmp = tempfile.mkdtemp(prefix="run_library.")
    command = [sys.executable, os.path.abspath(__file__), "--mlx", args.mlx, "--seed", str(seed),
               "-j", str(max(1, (args.jobs or os.cpu_count() or 1) // n))]
    for flag, values in (("--filter", args.filter), ("--exclude", args.exclude), ("--family", args.family),
                         ("--exclude-family", args.exclude_family), ("--matrix-path", args.matrix_path),
                         ("--budget-scale", args.budget_scale)):
        for v in values:
            command += [flag, v]
    t0 = time.time()
    children = [subprocess.Popen(command + ["--shard", f"{k}/{n}", "--report", os.path.join(tmp, f"shard{k}")])
                for k in range(n)]
    try:
        for child in children:
            child.wait()
    except KeyboardInterrupt:  # each child has written the report of the cases it finished, and writes it once more
        for child in children:
            if child.poll() is None:
                child.send_signal(signal.SIGTERM)
        deadline = time.time() + 10  # a child inside a pipeline build hears the signal only when the build returns
        for child in children:
            try:
                child.wait(timeout=max(0.1, deadline - time.time()))
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
    elapsed = time.time() - t0
    died = [(k, c.returncode) for k, c in enumerate(children) if c.returncode not in (0, 1)]
    for k, rc in died:
        print(f"process {k} of {n} exited with status {rc}: the report has only the cases it finished", file=sys.stderr)
    below = []
    for path in paths:
        by_name = {}
        for k in range(n):
            shard = path_report(os.path.join(tmp, f"shard{k}"), paths, path) + ".json"
            if os.path.exists(shard):
                with open(shard) as f:
                    by_name.update((r["case"], r) for r in json.load(f)["cases"])
        rows = [by_name[c.name] for c in cases if c.name in by_name]
        if len(rows) < len(cases):
            print((f"[{path}] " if path_label(paths, path) else "") + f"{len(cases) - len(rows)} of {len(cases)} cases not "
                  "reached", file=sys.stderr)
        below += conclude(args, rows, paths, path, device, seed, elapsed)
    shutil.rmtree(tmp, ignore_errors=True)
    return 1 if below or died else 0


def warm_pipelines(runner, cases, seed, jobs):
    """Runs every case once on `jobs` threads, each with its own stream, and forgets the results; pipelines stay
    in the device's cache. A fault here costs only time: the reported pass runs each case again, alone."""
    t0 = time.time()
    before = m2v.pipeline_stats()
    local = threading.local()

    def run(case):
        if not hasattr(local, "runner"):
            local.runner = copy.copy(runner)  # the compiled libraries shared, a stream of its own
            local.runner.stream = m2v.Stream(timestamps=True)
        t = time.time()
        r = local.runner.run_case(case, case_seed(seed, case.name))
        print(f"warm     {case.name} ({time.time() - t:.1f} s, {r.stage}, at {time.time() - t0:.0f} s)", flush=True)

    pool = concurrent.futures.ThreadPoolExecutor(max_workers=jobs)
    try:
        list(pool.map(run, cases))
    finally:  # a stop from outside ends the warm pass at once: the cases not yet started never start
        pool.shutdown(wait=False, cancel_futures=True)
    m2v.validation_messages()  # attributed to no case: the reported pass sees its own
    after = m2v.pipeline_stats()
    # builds that overlapped sum to more driver time than the pass took
    print(f"warm pass: {len(cases)} cases on {jobs} threads in {time.time() - t0:.1f} s; "
          f"{after['created'] - before['created']} pipelines built in "
          f"{after['build_s'] - before['build_s']:.1f} s of driver time", file=sys.stderr, flush=True)


def run_cases(runner, cases, seed, label, after_each=None):
    """Runs the cases in order; returns (results, seconds, interrupted). after_each(results, start) after each."""
    t0 = time.time()
    results = []
    try:
        for c in cases:
            t = time.time()
            r = runner.run_case(c, case_seed(seed, c.name))
            results.append(r)
            gpu = f" {r.gpu_us:.1f} us" if r.gpu_us is not None else ""
            print((f"[{label}] " if label else "") + f"{r.stage:8} {c.name}{gpu} ({time.time() - t:.1f} s)" +
                  (f"  [{r.cause}] {r.message}" if r.message else ""), flush=True)
            if after_each:
                after_each(results, t0)
    except KeyboardInterrupt:
        print(f"interrupted after {len(results)} of {len(cases)} cases", flush=True)
        return results, time.time() - t0, True
    return results, time.time() - t0, False


def below_floor(floor_file, rows, label):
    """The floor's cases that did not match (each printed)."""
    with open(floor_file) as f:
        floor = [ln.split("#")[0].strip() for ln in f if ln.split("#")[0].strip()]
    by_name = {r["case"]: r for r in rows}
    below = [n for n in floor if n not in by_name or by_name[n]["stage"] != "matched"]
    for n in below:
        r = by_name.get(n)
        print((f"[{label}] " if label else "") + f"below floor: {n}: " +
              (f"{r['stage']} {r['message']}" if r else "not run"), file=sys.stderr)
    return below


if __name__ == "__main__":
    sys.exit(main())
