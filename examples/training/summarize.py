"""Tables for docs/training.md from the arms' CSV files written by train.py.

    /usr/bin/python3 examples/training/summarize.py docs/data/training

Per arm: the loss (mean of the last 20 steps), ‖W_Q‖₂ and ‖W_K‖₂ per layer at the start and the
end, P̄ = 1 entries per step, and per tracked gradient error: its size relative to the fp32
shadow gradient (dQ, dK, dV only), the running sum's norm ratio ‖Σe‖/Σ‖e‖ and top singular
value share at the last step, the mean cosine of a step's error with the sum before it (second
half of the run), the signed mean: the t statistic of the per-step means over the steps and
the share of steps whose mean has the majority sign, and (O and delta) the away-from-zero
index mean(e·sign(ref))/mean|e|: its mean over the steps and t statistic."""

import csv
import math
import os
import statistics
import sys

ARMS = ["fp32", "fa2_sm90", "paper_autocast", "paper_autocast_rowsum_fp32", "paper_autocast_pv_fp32",
        "paper_autocast_stabilized"]


def read(path):
    with open(path, newline="") as f:
        return [{k: (None if v == "" else float(v)) for k, v in r.items()} for r in csv.DictReader(f)]


def col(rows, key):
    return [r[key] for r in rows if r.get(key) is not None]


def tstat(xs):
    if len(xs) < 3:
        return float("nan")
    sd = statistics.stdev(xs)
    return statistics.mean(xs) / (sd / math.sqrt(len(xs))) if sd > 0 else float("nan")


def main(out):
    data = {a: read(os.path.join(out, f"{a}.csv")) for a in ARMS if os.path.exists(os.path.join(out, f"{a}.csv"))}
    if not data:
        sys.exit(f"no arm CSV files in {out}")
    layers = sorted({k.split(".")[0] for k in next(iter(data.values()))[0] if k.startswith("L")})
    print("| arm | steps | loss (last 20) | acc (last 20) | P̄=1 per step | s/step | "
          + " | ".join(f"{l} ‖W_Q‖₂ start→end" for l in layers) + " |")
    print("|---" * (6 + len(layers)) + "|")
    for a, rows in data.items():
        last = rows[-20:]
        wq = [f"{rows[0][f'{l}.W_Q_norm']:.4f}→{rows[-1][f'{l}.W_Q_norm']:.4f}" for l in layers]
        print(f"| {a} | {len(rows)} | {statistics.mean(col(last, 'loss')):.4f} | {statistics.mean(col(last, 'acc')):.3f} "
              f"| {statistics.mean(col(rows, 'p_equals_one')):.0f} | {statistics.mean(col(rows, 'seconds')):.2f} | "
              + " | ".join(wq) + " |")
    quantities = [f"{l}.{q}" for l in layers for q in ("O", "delta", "dQ", "dK", "dV", "W_Q", "W_K", "W_V", "W_O")
                  ] + ["all_weights"]
    print()
    print("| quantity | arm | rel. error | ‖Σe‖/Σ‖e‖ | σ₁² share | cos(e, Σe) 2nd half | mean t | majority sign "
          "| away index (t) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for q in quantities:
        for a, rows in data.items():
            half = rows[len(rows) // 2:]
            means = col(rows, f"{q}.mean")
            pos = sum(m > 0 for m in means)
            share = max(pos, len(means) - pos) / len(means) if means else float("nan")
            rel = col(rows, f"{q}.rel")
            print(f"| {q} | {a} | {statistics.mean(rel):.2e} | " if rel else f"| {q} | {a} | – | ", end="")
            aw = col(rows, f"{q}.away")
            aw_text = f"{statistics.mean(aw):+.3f} ({tstat(aw):.1f})" if aw else "–"
            print(f"{rows[-1][f'{q}.ratio']:.3f} | {rows[-1][f'{q}.sv_share']:.3f} | "
                  f"{statistics.mean(col(half, f'{q}.cos_with_sum')):.3f} | {tstat(means):.1f} | {share:.2f} "
                  f"| {aw_text} |")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "docs/data/training")
