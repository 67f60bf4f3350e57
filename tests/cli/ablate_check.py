#!/usr/bin/env python3
"""Cross-checks of `bf16emu ablate` (driver for tests/cli/ablate.cmake).

  ablate_check.py threads BINARY ARGS...   --threads 1 and --threads 2 give byte-identical JSON
  ablate_check.py attention BINARY ARGS... the baseline's bias and se over heads equal those of
                                           `bf16emu attention --heads H --json` on the same
                                           scenario (output_error.mean_signed, stderr_heads): two
                                           code paths (per-head means averaged vs one pooled mean
                                           with a cluster-robust se by head) that agree to rounding
                                           when every head has n*d finite outputs
"""
import json
import math
import subprocess
import sys


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, timeout=300)
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)}: exit {p.returncode}: {p.stderr.decode()[-400:]}")
    return p.stdout


def main():
    mode, binary, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    if mode == "threads":
        one = run([binary, "ablate", *args, "--json", "--threads", "1"])
        two = run([binary, "ablate", *args, "--json", "--threads", "2"])
        if one != two:
            sys.exit("ablate --json differs between --threads 1 and --threads 2")
        if not json.loads(one)["configurations"]:
            sys.exit("no configurations")
        return
    if mode == "attention":
        ab = json.loads(run([binary, "ablate", *args, "--sites", "input", "--json"]))
        heads = str(ab["heads"])
        # the ablate options that `attention` shares (the others are ablate's own)
        at = json.loads(run([binary, "attention", *args, "--no-ledger", "--json"]))
        base, e = ab["configurations"][0]["o"], at["output_error"]
        if at["heads"] != ab["heads"] or e["nonfinite"] != 0:
            sys.exit(f"setup: heads {at['heads']} vs {heads}, nonfinite {e['nonfinite']}")
        for k_ab, k_at in (("mean", "mean_signed"), ("se", "stderr_heads")):
            a, b = base[k_ab], e[k_at]
            if not math.isclose(a, b, rel_tol=1e-9, abs_tol=0):
                sys.exit(f"ablate {k_ab} {a!r} != attention {k_at} {b!r}")
        print(f"ablate baseline {base['mean']:.6e} +- {base['se']:.3e} == attention {e['mean_signed']:.6e} "
              f"+- {e['stderr_heads']:.3e}")
        return
    sys.exit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
