#!/usr/bin/env python3
"""Compares two directories written by scripts/refactor-outputs.sh.

JSON outputs are compared as values: every number must be the same binary64 (the writer may
print it differently: shortest round trip or %.17g), and a non-finite number may have become
null. Timing fields (seconds) are ignored. Other files must match byte for byte, except
lines that report a time. Prints one line per file and exits 1 on any difference."""
import json
import math
import os
import re
import sys

TIMING_KEYS = {"seconds", "wall_seconds", "elapsed"}
TIMING_LINE = re.compile(r"(\d+(\.\d+)? ?(s|ms)\b|seconds|elapsed)")


def load_json(path):
    def bad_const(c):
        return {"Infinity": math.inf, "-Infinity": -math.inf, "NaN": math.nan}[c]

    with open(path) as f:
        text = f.read().replace("1e999", "Infinity")
    try:
        return json.loads(text, parse_constant=bad_const)
    except json.JSONDecodeError:
        # several JSON documents, one per line
        return [json.loads(l, parse_constant=bad_const) for l in text.splitlines() if l.strip()]


def same(a, b, path):
    if isinstance(a, dict) and isinstance(b, dict):
        diffs = []
        for k in sorted(set(a) | set(b)):
            if k in TIMING_KEYS:
                continue
            if k not in a or k not in b:
                diffs.append(f"{path}.{k}: only in {'new' if k in b else 'old'}")
                continue
            diffs += same(a[k], b[k], f"{path}.{k}")
        return diffs
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{path}: length {len(a)} vs {len(b)}"]
        out = []
        for i, (x, y) in enumerate(zip(a, b)):
            out += same(x, y, f"{path}[{i}]")
        return out
    if isinstance(a, float) and not math.isfinite(a) and b is None:
        return []  # Inf/NaN printed as null by the one JSON writer
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        if a == b or (a != a and b != b):
            return []
        return [f"{path}: {a!r} vs {b!r}"]
    return [] if a == b else [f"{path}: {a!r} vs {b!r}"]


def main(old, new):
    bad = 0
    for name in sorted(os.listdir(old)):
        po, pn = os.path.join(old, name), os.path.join(new, name)
        if not os.path.exists(pn):
            print(f"MISSING {name}")
            bad += 1
            continue
        if name.endswith(".json"):
            try:
                d = same(load_json(po), load_json(pn), "$")
            except Exception as e:  # not JSON (e.g. an error message): compare bytes
                d = [] if open(po, "rb").read() == open(pn, "rb").read() else [f"not JSON and differs ({e})"]
        else:
            lo = [l for l in open(po, "rb").read().decode(errors="replace").splitlines()
                  if not TIMING_LINE.search(l)]
            ln = [l for l in open(pn, "rb").read().decode(errors="replace").splitlines()
                  if not TIMING_LINE.search(l)]
            d = [] if lo == ln else [f"line {next(i for i, (x, y) in enumerate(zip(lo + [''], ln + [''])) if x != y) + 1} differs"]
        print(("SAME " if not d else "DIFF ") + name + ("" if not d else ": " + "; ".join(d[:5])))
        bad += bool(d)
    print(f"compare-outputs: {bad} of {len(os.listdir(old))} files differ")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
