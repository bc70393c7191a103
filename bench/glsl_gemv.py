#!/usr/bin/env python3
"""Does the translation or the Vulkan path stop MLX's gemv? MLX's gemv kernel as metal2vk translates it, beside a
hand-written GLSL gemv with MLX's tile (bench/glsl/gemv_tile.comp and its variants), both run by metal2vk's runtime
on one stream, timed alike (GPU timestamps after a 500 ms warm-up of the same work), outputs checked against numpy.

    cd bench/glsl && for v in "" -DREADONLY -DUNROLL2 "-DREADONLY -DUNROLL2" -DADDR64; do
        glslangValidator -V --target-env vulkan1.3 $v gemv_tile.comp \
            -o gemv_tile$(echo $v | sed 's/-D/_/g;s/ //g' | tr A-Z a-z).spv; done
    PYTHONPATH=<metal2vk python> python3 bench/glsl_gemv.py [--mlx ROOT] [--spv-dir bench/glsl] [--report PREFIX]

The hand-written kernel follows metal2vk's kernel ABI (docs/ABI.md), so the runtime, the stream and the timing are
the same for both: only the module differs. One more row passes its K by setBytes, as translated kernels get their
scalars (the runtime's staging memory; M2V_ARENA_IN_HOST_MEMORY=1 puts that in host memory, as it was). f16, W (N x K) row-major, the shapes of bench/mlx_vs_torch.py's gemv rows.
"""
import argparse
import json
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
LIB = os.path.join(os.path.dirname(HERE), "corpus", "mlx-library")
sys.path.insert(0, LIB)
sys.path.insert(0, os.path.join(LIB, "cases"))

import metal2vk as m2v  # noqa: E402
import mlxrun  # noqa: E402
from mlxrun import Case, Ctx, store  # noqa: E402
from probe_timing import time_stream  # noqa: E402

VARIANTS = {"gemv_tile": "as written", "gemv_tile_readonly": "W, x readonly restrict",
            "gemv_tile_unroll2": "two steps per trip", "gemv_tile_readonly_unroll2": "readonly restrict, two steps",
            "gemv_tile_addr64": "64-bit address arithmetic per load, as translated"}
SHAPES = [(8192, 8192), (14336, 4096), (4096, 14336), (4096, 4096), (1024, 3072)]


def reflection(name):
    """The reflection of gemv_tile.comp: buffers W, x, y, K at push-constant offsets 16..40, 32-wide subgroups."""
    params = [{"name": n, "type": t, "address_space": a, "kind": "buffer", "index": i}
              for i, (n, t, a) in enumerate([("w", "const device half*", "device"), ("x", "const device half*", "device"),
                                             ("y", "device half*", "device"), ("k", "constant uint&", "constant")])]
    return json.dumps({
        "entry": name, "spirv_entry": "main", "source": "bench/glsl/gemv_tile.comp", "line": 1, "params": params,
        "push_constants": {"size": 48, "argument_buffer": False, "grid_offset": 0,
                           "args": [{"buffer": i, "offset": 16 + 8 * i, "used": True} for i in range(4)]},
        "function_constants": [], "threadgroup_memory": {"static_bytes": 0, "dynamic": []},
        "workgroup_size_spec_ids": [131072, 131073, 131074], "required_subgroup_size": 32,
        "capabilities": [], "extensions": []})


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mlx", default=os.environ.get("M2V_MLX_ROOT") or os.path.join(
        os.path.dirname(os.path.dirname(HERE)), "shared", "third_party", "mlx"))
    ap.add_argument("--spv-dir", default=os.path.join(HERE, "glsl"))
    ap.add_argument("--ceiling-gbs", type=float, default=4110)
    ap.add_argument("--report")
    args = ap.parse_args()
    import gemv

    plans = {}
    for n, k in SHAPES:
        W, X = gemv.View((n, k)), gemv.View((k, 1))
        plans[(n, k)] = (W, X, gemv.plan_matmul("f16", W, X))
    runner = mlxrun.Runner(os.path.abspath(args.mlx), jobs=0)
    runner.compile([Case("gemv", "bench", gemv.FILE, sorted({p["name"] for *_, p in plans.values()}), None)])
    runner.stream = s = m2v.Stream(timestamps=True)
    hand = {}
    for name in VARIANTS:
        path = os.path.join(args.spv_dir, name + ".spv")
        if os.path.exists(path):
            hand[name] = m2v.load_kernel(path, reflection(name))
        else:
            print(f"{name}: {path} not built (see the docstring); skipped", file=sys.stderr)
    rng = np.random.default_rng(0)
    rows = []
    for (n, k), (W, X, p) in plans.items():
        ctx = Ctx(runner, Case("gemv", "bench", gemv.FILE, [p["name"]], None), 0)
        w = rng.uniform(-1, 1, (n, k)).astype(np.float32)
        x = rng.uniform(-1, 1, (k, 1)).astype(np.float32)
        wb, xb = ctx.buffer(store(w, "f16")), ctx.buffer(store(x, "f16"))
        want = w.astype(np.float16).astype(np.float64) @ x.astype(np.float16).astype(np.float64)
        out = m2v.Buffer(n * 2)
        margs = {i: out if isinstance(a, str) else {id(W): wb, id(X): xb}[id(a)] if isinstance(a, gemv.View) else a
                 for i, a in p["args"].items()}
        runs = [("MLX's gemv, translated", p["name"],
                 lambda: ctx.launch(p["name"], margs, groups=p["groups"], threadgroup=p["threadgroup"],
                                    constants=p["constants"]))]
        kbuf = ctx.buffer(np.array([k], np.uint32))

        def hand_launch(kern, k_by_bytes=False, threadgroup=(256, 1, 1)):
            s.set_kernel(kern)
            for i, b in enumerate((wb, xb, out)):
                s.set_buffer(b, i)
            if k_by_bytes:  # as translated kernels get their scalars: setBytes, in the runtime's staging memory
                s.set_bytes(np.array([k], np.uint32), 3)
            else:
                s.set_buffer(kbuf, 3)
            s.dispatch_threadgroups((n // 32, 1, 1), threadgroup)

        if n % 32 == 0 and k % 256 == 0:
            runs += [(f"hand-written GLSL, {VARIANTS[name]}", name, (lambda kern=kern: hand_launch(kern)))
                     for name, kern in hand.items()]
            if "gemv_tile" in hand:
                runs.append(("hand-written GLSL, as written, K by setBytes", "gemv_tile",
                             lambda: hand_launch(hand["gemv_tile"], True)))
                # MLX's threadgroup shape: (32, 1, 8), simdgroup = z (the kernel uses gl_SubgroupID either way)
                runs.append(("hand-written GLSL, as written, threadgroup (32, 1, 8)", "gemv_tile",
                             lambda: hand_launch(hand["gemv_tile"], False, (32, 1, 8))))
        nbytes = (n * k + k + n) * 2
        for label, kernel, launch in runs:
            s.fill(out, 0xFF)
            us = time_stream(s, launch, 20, 0.5)
            got = s.read(out, np.float16, (n, 1)).astype(np.float64)
            err = float(np.max(np.abs(got - want) / np.maximum(1, np.abs(want))))
            row = {"shape": f"{n}x{k}", "kernel": kernel, "what": label, "us": round(us, 2),
                   "gbs": round(nbytes / us / 1e3, 1), "of_ceiling": round(nbytes / us / 1e3 / args.ceiling_gbs, 3),
                   "max_rel_err": err, "ok": err < 2e-2}
            rows.append(row)
            print(json.dumps(row), flush=True)
    if args.report:
        dev = m2v.device_info()["description"]
        with open(args.report + ".json", "w") as f:
            json.dump({"device": dev, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "rows": rows}, f,
                      indent=1)
        with open(args.report + ".md", "w") as f:
            f.write(f"# MLX's gemv translated vs hand-written GLSL with its tile\n\nDevice: {dev}. "
                    f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}. `bench/glsl_gemv.py`; f16; GB/s of the "
                    f"bytes read and written once, ceiling {args.ceiling_gbs:.0f} GB/s.\n\n"
                    "| shape | what | kernel | µs | GB/s | of ceiling | max rel. error |\n|---|---|---|---|---|---|---|\n")
            for r in rows:
                f.write(f"| {r['shape']} | {r['what']} | `{r['kernel']}` | {r['us']} | {r['gbs']} | "
                        f"{100 * r['of_ceiling']:.0f}% | {r['max_rel_err']:.1g}{'' if r['ok'] else ' WRONG'} |\n")
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
