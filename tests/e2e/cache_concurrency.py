#!/usr/bin/env python3
"""Caches under concurrency and crashes: no process ever loads a torn or wrong cache entry.

Rounds of 8 `m2v mlx` processes share one M2V_CACHE_DIR (the MLX module cache in mlx/ and the Vulkan pipeline cache
beside it). They run four different kernels (two processes each: the same and different entries at once), and a few
of them are killed with SIGKILL at random moments: while compiling, while writing a cache entry, while running. Every
process that is not killed must exit 0 with outputs equal to a CPU reference, and after each round every cache file
must be whole (the writers use a temporary file and a rename). Then every module entry is torn on purpose (truncated,
or its bytes flipped) and the pipeline cache replaced by garbage: the next processes must notice, recompile and still
match. Exits 1 with the reasons on any failure.

usage: cache_concurrency.py M2V WORK_DIR [--rounds N]
"""
import argparse
import json
import os
import random
import shutil
import signal
import struct
import subprocess
import sys
import time

import numpy as np

KERNELS = 4
PROCESSES = 8
N = 64


def spec(k):
    # k changes the text (so the cache key) and the result.
    return {"name": f"cache_{k}", "input_names": ["x"], "output_names": ["out"],
            "source": f"uint i = thread_position_in_grid.x; out[i] = x[i] * {k + 2}.0f + {k}.0f;",
            "inputs": [{"data": [float(i) for i in range(N)], "dtype": "float32"}],
            "grid": [N, 1, 1], "threadgroup": [32, 1, 1], "output_shapes": [[N]], "output_dtypes": ["float32"]}


def reference(k):
    return np.arange(N, dtype=np.float32) * (k + 2) + k


def check_module_entry(path):
    """The .m2vmod layout (mlx/ModuleCache.cpp): magic, u64 variant bits (1: a cooperative-matrix build follows the
    portable module, 2: a native-bfloat16 build follows), per module a u64 JSON size, the JSON, a u64 word count and
    the SPIR-V words, then a 64-char SHA-256, EOF. (The checksum itself is the reader's to verify; the torn-entry phase
    below tests that it does.)"""
    data = open(path, "rb").read()
    if len(data) < 16 or data[:8] != b"M2VMOD04":
        return f"bad magic {data[:8]!r}"
    (variants,) = struct.unpack_from("<Q", data, 8)
    if variants & ~3:
        return f"variant bits {variants}"
    count = 1 + bin(variants).count("1")
    at = 16
    for _ in range(count):
        if at + 8 > len(data):
            return "truncated"
        (jn,) = struct.unpack_from("<Q", data, at)
        if at + 8 + jn + 8 > len(data):
            return "truncated reflection"
        try:
            json.loads(data[at + 8:at + 8 + jn])
        except ValueError as e:
            return f"reflection is not JSON: {e}"
        (words,) = struct.unpack_from("<Q", data, at + 8 + jn)
        at += 16 + jn
        if at + 4 * words > len(data) or words == 0 or struct.unpack_from("<I", data, at)[0] != 0x07230203:
            return "not SPIR-V"
        at += 4 * words
    if at + 64 != len(data):
        return f"size {len(data)} does not match its modules"
    return None


def check_cache(cache):
    problems = []
    mods = os.path.join(cache, "mlx")
    for name in sorted(os.listdir(mods)) if os.path.isdir(mods) else []:
        if ".tmp." in name:
            continue  # a killed writer's temporary file: never read (readers open only KEY.m2vmod)
        p = check_module_entry(os.path.join(mods, name))
        if p:
            problems.append(f"mlx/{name}: {p}")
    for name in os.listdir(cache):
        if name.startswith("pipelines-") and name.endswith(".bin"):
            data = open(os.path.join(cache, name), "rb").read()
            if len(data) < 32 or struct.unpack_from("<I", data, 0)[0] != 16 + 16:
                problems.append(f"{name}: not a whole VkPipelineCache blob ({len(data)} bytes)")
    return problems


def launch(m2v, work, k, tag, env):
    d = os.path.join(work, f"run-{tag}")
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, "spec.json")
    with open(path, "w") as f:
        json.dump(spec(k), f)
    p = subprocess.Popen([m2v, "mlx", path, "-o", os.path.join(d, "out")], stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, env=env)
    return p, k, d


def finish(runs, killed, failures, timeout=300):
    for i, (p, k, d) in enumerate(runs):
        try:
            _, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            failures.append(f"{d}: no exit within {timeout} s")
            continue
        if i in killed:
            continue
        if p.returncode != 0:
            failures.append(f"{d}: exit {p.returncode}: {err.decode(errors='replace')[-1500:]}")
            continue
        got = np.load(os.path.join(d, "out", "out.npy"))
        if not np.array_equal(got, reference(k)):
            failures.append(f"{d}: wrong output for kernel {k}: {got[:6]} ...")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("m2v")
    ap.add_argument("work")
    ap.add_argument("--rounds", type=int, default=4)
    a = ap.parse_args()
    shutil.rmtree(a.work, ignore_errors=True)
    cache = os.path.join(a.work, "cache")
    os.makedirs(cache)
    env = dict(os.environ, M2V_CACHE_DIR=cache, LP_NATIVE_VECTOR_WIDTH=os.environ.get("LP_NATIVE_VECTOR_WIDTH", "256"))
    rng = random.Random(int.from_bytes(os.urandom(4), "little"))
    failures = []
    kills = 0
    for r in range(a.rounds):
        if r == 1:
            shutil.rmtree(cache)  # round 1 races on an empty cache again, now with warm page caches
            os.makedirs(cache)
        runs = [launch(a.m2v, a.work, i % KERNELS, f"{r}-{i}", env) for i in range(PROCESSES)]
        victims = set(rng.sample(range(PROCESSES), 3))
        start = time.monotonic()
        for v in sorted(victims, key=lambda _: rng.random()):
            time.sleep(max(0.0, rng.uniform(0.0, 1.5) - (time.monotonic() - start)))
            if runs[v][0].poll() is None:
                runs[v][0].send_signal(signal.SIGKILL)
                kills += 1
        finish(runs, victims, failures)
        failures += [f"round {r}: {p}" for p in check_cache(cache)]

    # Torn entries on purpose: each module entry truncated or altered in place, and a garbage pipeline cache.
    mods = os.path.join(cache, "mlx")
    entries = [n for n in os.listdir(mods) if n.endswith(".m2vmod")] if os.path.isdir(mods) else []
    if len(entries) < KERNELS:
        failures.append(f"expected at least {KERNELS} module entries, found {len(entries)}")
    torn = {}
    for j, n in enumerate(sorted(entries)):
        p = os.path.join(mods, n)
        data = bytearray(open(p, "rb").read())
        if j % 2 == 0:
            data = data[:len(data) // 2]  # what a writer killed mid-write would leave without the rename
        else:
            data[-100] ^= 0x5A  # one damaged SPIR-V byte, same size: the checksum must keep it from the driver
        open(p, "wb").write(bytes(data))
        torn[p] = bytes(data)
    for n in os.listdir(cache):
        if n.startswith("pipelines-"):
            open(os.path.join(cache, n), "wb").write(os.urandom(4096))
    runs = [launch(a.m2v, a.work, i % KERNELS, f"torn-{i}", env) for i in range(PROCESSES)]
    finish(runs, set(), failures)
    failures += [f"after tearing: {p}" for p in check_cache(cache)]
    # A reader that refused the torn entry recompiled and replaced it; one that loaded it left it as it was.
    failures += [f"{os.path.basename(p)}: the torn entry was loaded, not replaced" for p, data in torn.items()
                 if open(p, "rb").read() == data]

    print(f"{a.rounds} rounds of {PROCESSES} processes, {kills} killed with SIGKILL, then {len(entries)} torn entries")
    if failures:
        print("FAIL:\n" + "\n".join(failures))
        return 1
    shutil.rmtree(a.work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
