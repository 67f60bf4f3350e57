#!/usr/bin/env python3
"""`bf16emu paper`'s ledger section against `bf16emu attention` on the same heads.

The ledger section of `bf16emu paper` reads the ledger that the bias section's paper:autocast
run files (io::head_bias_config::with_ledger) instead of running the heads again. This checks
that this ledger is the one `bf16emu attention --policy paper:autocast` gathers over the same
24 heads (its own run_attention): for every site, the inexact events, those away from zero, the
signed error and the same for the P-bar = 1 events are equal (the numbers as binary64), and the
sites listed are exactly those with an inexact event. The expected values come from another
code path (run_attention), not from the code under test.

usage: paper_ledger_matches_attention.py BF16EMU_CLI"""
import json
import subprocess
import sys


def run(cli, *args):
    return json.loads(subprocess.run([cli, *args], check=True, capture_output=True, text=True).stdout)


def main():
    cli = sys.argv[1]
    paper = run(cli, "paper", "--json")
    sec = paper["attention_ledger"]
    heads, n, d = sec["heads"], sec["n"], sec["d"]
    bias = paper["bias_over_heads"]
    att = run(cli, "attention", "--scenario", "sink", "--multiplicity", str(bias["multiplicity"]),
              "--strength", str(bias["strength"]), "--seed", str(bias["seed"]), "--n", str(n),
              "--d", str(d), "--heads", str(heads), "--policy", "paper:autocast", "--json")
    want = {}
    for name, s in att["sites"].items():
        inexact = s["away_from_zero"] + s["toward_zero"]
        if inexact == 0:
            continue
        p = s["p_equals_one"]
        want[name] = {"inexact": inexact, "away": s["away_from_zero"], "signed_error": s["sum"],
                      "p_one_inexact": p["away_from_zero"] + p["toward_zero"],
                      "p_one_signed_error": p["sum"]}
    got = {s["site"]: {k: v for k, v in s.items() if k != "site"} for s in sec["sites"]}
    bad = 0
    if sorted(got) != sorted(want):
        print(f"sites differ: paper {sorted(got)}, attention {sorted(want)}")
        bad += 1
    for name in sorted(set(got) & set(want)):
        for k, v in want[name].items():
            if got[name].get(k) != v:
                print(f"{name}.{k}: paper {got[name].get(k)!r}, attention {v!r}")
                bad += 1
    print(f"{len(want)} sites, {5 * len(want)} values compared, {bad} differences")
    return 1 if bad or not want else 0


if __name__ == "__main__":
    sys.exit(main())
