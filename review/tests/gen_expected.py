#!/usr/bin/env python3
"""Regenerates a fixture's expected.json from the `// EXPECT` and `// NEAR-MISS` markers in its sources.
EXPECT CHECK SEVERITY FUNCTION "TRIGGER SUBSTRING" marks a seeded hazard on that line; NEAR-MISS marks a line that
must not be reported. Run after editing fixtures: python3 gen_expected.py fixtures/mlxlike"""
import json, os, re, sys

root = sys.argv[1]
exp, near = [], []
for d, _, files in sorted(os.walk(root)):
    for f in sorted(files):
        if not f.endswith(('.cpp', '.h')):
            continue
        path = os.path.join(d, f)
        rel = os.path.relpath(path, root)
        for n, line in enumerate(open(path), 1):
            m = re.search(r'// EXPECT (\S+) (\S+) (\S+) "([^"]*)"', line)
            if m:
                exp.append({"file": rel, "line": n, "check": m[1], "severity": m[2], "function": m[3], "trigger": m[4]})
            m = re.search(r'// NEAR-MISS (.*)$', line)
            if m:
                near.append({"file": rel, "line": n, "what": m[1].strip()})
fixed = sorted({e for e in (os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs)
                if os.path.basename(e).startswith('fixed')})
json.dump({"expected": exp, "near_misses": near, "clean_files": fixed}, open(os.path.join(root, 'expected.json'), 'w'),
          indent=1)
print(f"{len(exp)} seeded hazards, {len(near)} near misses, clean files: {fixed}")
