#!/usr/bin/env python3
"""Draws the random sample of findings judged by hand: N findings (default 40, seed 26) from the union of the
reviews given, in a stable order, printed with what a judge needs (check, location, problem, trigger).

  sample.py [--n N] [--seed S] NAME=REVIEW.json ...
"""
import json
import random
import sys


def main():
    args = sys.argv[1:]
    n, seed = 40, 26
    if "--n" in args:
        n = int(args[args.index("--n") + 1])
    if "--seed" in args:
        seed = int(args[args.index("--seed") + 1])
    pool = []
    for a in args:
        if "=" not in a:
            continue
        name, path = a.split("=", 1)
        for f in json.load(open(path))["findings"]:
            pool.append((name, f))
    pool.sort(key=lambda x: (x[0], x[1]["file"], x[1]["line"], x[1]["check"]))
    rng = random.Random(seed)
    picked = sorted(rng.sample(range(len(pool)), min(n, len(pool))))
    print(f"# {len(picked)} of {len(pool)} findings, seed {seed}")
    for k, i in enumerate(picked, 1):
        name, f = pool[i]
        also = f.get("also_lines", [])
        print(json.dumps({"n": k, "fork": name, "check": f["check"], "severity": f["severity"],
                          "location": f"{f['file']}:{f['line']}" + (f" +{also}" if also else ""),
                          "function": f["function"], "problem": f["problem"], "trigger": f["trigger"][-300:],
                          "confidence": f.get("confidence", "")}))


if __name__ == "__main__":
    main()
