#!/usr/bin/env python3
"""Scores an `m2v review --json` result against a hand-made ground truth of a real fork (one JSON file here per
fork): recall per hazard, accepted spots flagged, and the findings matched to neither (to be judged by hand).

  score.py GROUNDTRUTH.json REVIEW.json [--unmatched]

A hazard counts as found when a finding's line, or one of the lines it groups (also_lines), falls in the hazard's
line range in its file. An accepted spot counts as flagged when a finding's line falls in its range."""
import json
import sys


def lines_of(f):
    return [f["line"]] + list(f.get("also_lines", []))


def hits(f, spot):
    if f["file"] != spot["file"]:
        return False
    lo, hi = spot["lines"]
    return any(lo <= l <= hi for l in lines_of(f))


def score(gt, review):
    findings = review["findings"]
    found, missed = [], []
    for h in gt["hazards"]:
        (found if any(hits(f, h) for f in findings) else missed).append(h)
    flagged = [(a, f) for a in gt["accepted"] for f in findings if hits(f, a)]
    matched = [f for f in findings if any(hits(f, h) for h in gt["hazards"])]
    other = [f for f in findings if f not in matched and not any(hits(f, a) for a in gt["accepted"])]
    per = {}
    for h in gt["hazards"]:
        c = per.setdefault(h["class"], [0, 0])
        c[0] += 1
        c[1] += h in found
    return {"hazards": len(gt["hazards"]), "found": len(found), "missed": missed, "accepted": len(gt["accepted"]),
            "accepted_flagged": flagged, "findings": len(findings), "matched": len(matched), "other": other,
            "per_class": per}


def main():
    gt = json.load(open(sys.argv[1]))
    review = json.load(open(sys.argv[2]))
    s = score(gt, review)
    print(f"{gt['repo']}@{gt['commit'][:12]}: hazards {s['hazards']}, found {s['found']} "
          f"(recall {s['found'] / max(1, s['hazards']):.2f}); accepted spots {s['accepted']}, flagged "
          f"{len(s['accepted_flagged'])}; findings {s['findings']}: {s['matched']} on ground-truth hazards, "
          f"{len(s['other'])} elsewhere")
    for cls, (n, k) in sorted(s["per_class"].items()):
        print(f"  {cls}: {k}/{n}")
    for h in s["missed"]:
        print(f"  MISSED {h['file']}:{h['lines'][0]}-{h['lines'][1]} {h['class']}: {h['reason']}")
    for a, f in s["accepted_flagged"]:
        print(f"  ACCEPTED SPOT FLAGGED {a['file']}:{a['lines'][0]} by {f['check']} at line {f['line']}")
    if "--unmatched" in sys.argv:
        for f in s["other"]:
            print(f"  OTHER {f['severity']} {f['check']} {f['file']}:{f['line']} {f['function']}: {f['problem'][:120]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
