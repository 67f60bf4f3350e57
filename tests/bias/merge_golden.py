#!/usr/bin/env python3
"""Golden merge: `bf16emu merge` of three committed shard state files (tests/bias/golden, written
by `bf16emu bias --scenario paper --round nearest_even,stochastic --trials 5000 --shard k/3`).

1. Each shard run today writes its committed state file byte for byte (the generator, the trial
   split and the state format are unchanged).
2. Merging the committed states prints the committed CSV byte for byte.
3. That CSV agrees with statistics recomputed here from the state files alone, in Python's exact
   integers: the superaccumulator limbs of each shard are summed as integers, the counts added,
   the worst trial chosen by |ulp| then trial number, and mean, standard error, z and shares derived
   from the sums (printed to 6 significant digits, so compared to 5e-6 relative: half a unit
   in the sixth digit).

usage: merge_golden.py BF16EMU GOLDEN_DIR WORK_DIR
"""
import csv
import io
import math
import os
import subprocess
import sys
from fractions import Fraction

LIMBS, LSB = 34, -1074  # bias::superacc = fixed<34, -1074>: two's complement, 64-bit limbs
SUMS = ("s_ulp", "s_ulp2", "s_rel", "s_rel2", "s_abs", "s_mag")
COUNTS = ("trials", "nonfinite", "rel_trials", "away", "toward", "steps_inexact", "steps_away")
Z99 = 2.5758293035489004


def superacc(text):
    """The exact value, as a (numerator, 2^-1074 scale) integer, of 'i:hex,i:hex,...'."""
    v = 0
    for part in text.split(","):
        i, word = part.split(":")
        v |= int(word, 16) << (64 * int(i))
    if v >> (64 * LIMBS - 1):
        v -= 1 << (64 * LIMBS)
    return v


def read_state(path):
    stats = {}
    with open(path) as f:
        for line in f:
            words = line.split()
            if words[0] != "stats":
                continue
            fields = dict(w.split("=", 1) for w in words[2:])
            s = {k: int(fields[k]) for k in COUNTS}
            for k in SUMS:
                s[k] = superacc(fields[k]) if k in fields else 0
            s["worst"] = None
            if fields["has_worst"] == "1":
                s["worst"] = (int(fields["worst_trial"]), float.fromhex(fields["worst_ulp"]),
                              float.fromhex(fields["worst_err"]), float.fromhex(fields["worst_rel"]))
            stats[int(words[1])] = s
    return stats


def merged(states):
    out = {}
    for st in states:
        for i, s in st.items():
            m = out.setdefault(i, {k: 0 for k in COUNTS + SUMS} | {"worst": None})
            for k in COUNTS + SUMS:
                m[k] += s[k]
            w = s["worst"]
            if w is not None and (m["worst"] is None or abs(w[1]) > abs(m["worst"][1]) or
                                  (abs(w[1]) == abs(m["worst"][1]) and w[0] < m["worst"][0])):
                m["worst"] = w
    return out


def mean_se(s1, s2, n):
    """Mean and standard error of n values from their exact sums (limb integers), in rationals."""
    if n == 0:
        return 0.0, 0.0
    one = Fraction(1, 2**(-LSB))
    S1, S2 = s1 * one, s2 * one
    mean = S1 / n
    if n < 2:
        return float(mean), 0.0
    var = max((S2 - S1 * S1 / n) / (n - 1), Fraction(0))
    return float(mean), math.sqrt(float(var / n))


def expected_rows(m):
    rows = []
    for i in sorted(m):
        s = m[i]
        n = s["trials"]
        mean, se = mean_se(s["s_ulp"], s["s_ulp2"], n)
        mean_rel, se_rel = mean_se(s["s_rel"], s["s_rel2"], s["rel_trials"])
        mag, se_mag = mean_se(s["s_mag"], s["s_ulp2"], n)
        w = s["worst"] or (0, 0.0, 0.0, 0.0)
        rows.append({
            "trials": n, "nonfinite": s["nonfinite"], "mean_ulp": mean, "se_ulp": se,
            "ci99_lo_ulp": mean - Z99 * se, "ci99_hi_ulp": mean + Z99 * se, "z": mean / se if se else 0.0,
            "mean_rel": mean_rel, "se_rel": se_rel, "mean_away_ulp": mag, "se_away_ulp": se_mag,
            "z_away": mag / se_mag if se_mag else 0.0, "share_away": s["away"] / n,
            "share_toward": s["toward"] / n, "share_steps_away": s["steps_away"] / s["steps_inexact"],
            "worst_trial": w[0], "worst_ulp": w[1], "worst_err": w[2], "worst_rel": w[3],
        })
    return rows


def main():
    bf, golden, work = sys.argv[1:4]
    os.makedirs(work, exist_ok=True)
    names = [f"s{k}.state" for k in range(3)]
    failures = 0
    for k, name in enumerate(names):
        path = os.path.join(work, name)
        subprocess.run([bf, "bias", "--scenario", "paper", "--round", "nearest_even,stochastic", "--trials", "5000",
                        "--threads", "1", "--quiet", "--shard", f"{k}/3", "--state", path], check=True)
        if open(path, "rb").read() != open(os.path.join(golden, name), "rb").read():
            print(f"FAIL: shard {k}/3 today differs from golden/{name}")
            failures += 1
    states = [os.path.join(golden, n) for n in names]
    csv_text = subprocess.run([bf, "merge", *states, "--csv"], check=True, capture_output=True, text=True).stdout
    if csv_text != open(os.path.join(golden, "merged.csv")).read():
        print("FAIL: merge of the golden states differs from golden/merged.csv:\n" + csv_text)
        failures += 1
    rows = list(csv.DictReader(io.StringIO(csv_text)))
    want = expected_rows(merged([read_state(p) for p in states]))
    if len(rows) != len(want):
        print(f"FAIL: {len(rows)} rows, {len(want)} configurations in the states")
        return 1
    checked = 0
    for r, w in zip(rows, want):
        for k, v in w.items():
            got = float(r[k])
            if not math.isclose(got, v, rel_tol=5e-6, abs_tol=1e-300):
                print(f"FAIL: {r['round']} {k}: merge printed {r[k]}, recomputed {v!r}")
                failures += 1
            checked += 1
    print(f"merge golden: {len(rows)} configurations, {checked} fields recomputed from the states, "
          f"{failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
