"""Every number of docs/training.md's results, recomputed from the committed per-step data.

    /usr/bin/python3 examples/training/summarize.py docs/data/training/decisive
    /usr/bin/python3 examples/training/summarize.py docs/data/training/decisive --check docs/training.md
    /usr/bin/python3 examples/training/summarize.py docs/data/training/decisive --write docs/training.md
    /usr/bin/python3 examples/training/summarize.py docs/data/training/decisive --plot    # SET/training.png

It prints markdown blocks, each headed by its name. docs/training.md holds each block between
`<!-- summarize:NAME -->` and `<!-- /summarize -->`; --check regenerates them and fails (exit 1)
naming the first block that differs, so a figure in the doc that the data do not give is caught
(CTest python.training_doc_numbers).

Statistics (stated in docs/data/training/decisive/PLAN.md before the runs). A per-step series
x_1..x_T is split into B = 20 consecutive batches of ⌊T/20⌋ steps (a trailing remainder is left
out); the batch means are treated as independent, which absorbs the steps' autocorrelation up to
a batch's length; t = mean/(sd/√B) with B − 1 degrees of freedom, two-sided p. Paired
comparisons use the per-step difference of two arms (same batches, same step). The primary
family is corrected with Holm's step-down method at family-wise α = 0.05.
"""

import argparse
import csv
import json
import math
import os
import re
import statistics
import sys

ARMS = ["control_fp32", "paper_autocast", "paper_autocast_rowsum_fp32", "paper_autocast_pv_fp32",
        "paper_autocast_stabilized", "placebo_sr"]
SHORT = {"control_fp32": "control (fp32)", "paper_autocast": "paper:autocast",
         "paper_autocast_rowsum_fp32": "… l → FP32", "paper_autocast_pv_fp32": "… P̄V, O update → FP32",
         "paper_autocast_stabilized": "… stabilized (β 2)", "placebo_sr": "placebo (fp32, O SR to BF16)"}
BATCHES = 20
ALPHA = 0.05


def read(path):
    with open(path, newline="") as f:
        return [{k: (None if v == "" else float(v)) for k, v in r.items()} for r in csv.DictReader(f)]


# ---- Student's t, from the regularized incomplete beta function (no SciPy on Debian's base) ----

def _betacf(a, b, x):
    """Continued fraction of the incomplete beta function (modified Lentz)."""
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 400):
        m2 = 2 * m
        for num in (m * (b - m) * x / ((a + m2 - 1) * (a + m2)), -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1))):
            d = 1.0 + num * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + num / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return h


def betainc(a, b, x):
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    lbeta = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    if x < (a + 1) / (a + b + 2):
        return math.exp(lbeta) * _betacf(a, b, x) / a
    return 1.0 - math.exp(lbeta) * _betacf(b, a, 1 - x) / b


def t_two_sided_p(t, df):
    if math.isnan(t):
        return float("nan")
    return betainc(df / 2.0, 0.5, df / (df + t * t))


def batch_means(xs):
    n = len(xs) // BATCHES
    if n < 1:
        return []
    return [statistics.fmean(xs[i * n:(i + 1) * n]) for i in range(BATCHES)]


def bm_test(xs):
    """(mean of the batch means, t, two-sided p) of a per-step series."""
    bm = batch_means(xs)
    if len(bm) < 3:
        return float("nan"), float("nan"), float("nan")
    m, sd = statistics.fmean(bm), statistics.stdev(bm)
    t = m / (sd / math.sqrt(len(bm))) if sd > 0 else float("nan")
    return m, t, t_two_sided_p(t, len(bm) - 1)


def holm(ps):
    """Holm-adjusted p values (same order as given)."""
    order = sorted(range(len(ps)), key=lambda i: ps[i])
    adj, running = [0.0] * len(ps), 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(ps) - rank) * ps[i]))
        adj[i] = running
    return adj


def series(rows, key):
    return [r[key] for r in rows]


def fit_series(rows, tag):
    """Per-batch least-squares fit of O_err ≈ a·u + b·w (u: the l site's predicted error, w: the
    P̄V site's) pooled over the batch's steps; returns the per-batch (a, b) and the pooled fit
    with the share of ‖O_err‖² each explains."""
    n = len(rows) // BATCHES
    per = []
    for i in range(BATCHES):
        sl = rows[i * n:(i + 1) * n]
        per.append(_fit([sum(r[f"sig_{tag}_{k}"] for r in sl) for k in ("uu", "uw", "ww", "eu", "ew", "ee")]))
    return per, _fit([sum(r[f"sig_{tag}_{k}"] for r in rows) for k in ("uu", "uw", "ww", "eu", "ew", "ee")])


def _fit(s):
    uu, uw, ww, eu, ew, ee = s
    det = uu * ww - uw * uw
    if det <= 0 or ee <= 0:
        return {"a": float("nan"), "b": float("nan"), "r2": float("nan"), "r2_u": float("nan"), "r2_w": float("nan")}
    a, b = (eu * ww - ew * uw) / det, (ew * uu - eu * uw) / det
    resid = ee - 2 * (a * eu + b * ew) + a * a * uu + 2 * a * b * uw + b * b * ww
    return {"a": a, "b": b, "r2": 1 - resid / ee, "r2_u": eu * eu / (uu * ee) if uu > 0 else 0.0,
            "r2_w": ew * ew / (ww * ee) if ww > 0 else 0.0}


def g_ratio_recomputed(rows):
    """‖ΣG‖/Σ‖G‖ at every step from the per-step norm and inner product with the earlier sum:
    ‖ΣG_t‖² = ‖ΣG_{t−1}‖² + 2⟨G_t, ΣG_{t−1}⟩ + ‖G_t‖²."""
    sq, norms, out = 0.0, 0.0, []
    for r in rows:
        sq += 2 * r["G.inner_prev"] + r["G.norm"] ** 2
        norms += r["G.norm"]
        out.append(math.sqrt(max(sq, 0.0)) / norms if norms > 0 else float("nan"))
    return out


def fmt_t(m, t, p, mfmt="{:+.3e}"):
    return f"{mfmt.format(m)} | {t:+.2f} | {p:.2g}"


SETS = ("authors", "reference")  # the primary set first (PLAN.md); the fp32 arms live in reference/


def load_set(d, name):
    """The arms of one set: its own CSV files, and the fp32 arms (control, placebo) from
    reference/ when the set has none of its own. None when the set is absent."""
    sd = os.path.join(d, name)
    if not os.path.isdir(sd):
        return None
    data = {}
    for a in ARMS:
        for where in (sd, os.path.join(d, "reference")):
            path = os.path.join(where, f"{a}.csv")
            if os.path.exists(path):
                data[a] = read(path)
                break
    if "paper_autocast" not in data or "control_fp32" not in data:
        sys.exit(f"summarize: {sd} lacks paper_autocast.csv or control_fp32.csv")
    T = min(len(r) for r in data.values())
    return {a: r[:T] for a, r in data.items()}


def blocks(d):
    with open(os.path.join(d, "gate.json")) as f:
        gate = json.load(f)
    out = {}
    g, cfg = gate["gate"], gate["config"]
    out["gate"] = "\n".join([
        "| the gate, at the checkpoint (8 batches, layer 0, BF16 q, k, v) | value |",
        "|---|---|",
        f"| rows with a tied maximum (k ≥ 2) | {g['rows_tied']:,} of {g['rows']:,} ({g['tied_share']:.1%}) |",
        f"| median k of those rows | {g['k_median']:.0f} |",
        f"| median r = l − k of those rows (gate: < {cfg['gate_r']}) | {g['r_median']:.3g} |",
        f"| 90th percentile of r | {g['r_p90']:.3g} |",
        f"| share of tied rows with r < 0.03 | {g['r_below_003']:.1%} |",
        f"| sign share of the planted V columns (gate: ≥ 0.95) | {g['v_sign_share_planted']:.4f} |",
        f"| gate met | {'yes' if g['passes'] else 'no'} |"])
    sets = {}
    for name in SETS:
        data = load_set(d, name)
        if data is not None:
            sets[name] = data
            out.update({f"{k}_{name}": v for k, v in set_blocks(data).items()})
    if not sets:
        sys.exit(f"summarize: {d} has neither authors/ nor reference/")
    return out, sets


def set_blocks(data):
    out = {}
    lines = ["| arm | steps | loss, last 100 | accuracy, last 100 | tied rows a step | median r (tied rows) "
             "| V sign share, planted / other | O rel. error | s/step |", "|---|---|---|---|---|---|---|---|---|"]
    for a, rows in data.items():
        last = rows[-100:]
        rm = [r["r_median_tied"] for r in rows if r["r_median_tied"] is not None]
        lines.append(
            f"| {SHORT[a]} | {len(rows)} | {statistics.fmean(series(last, 'loss')):.5f} "
            f"| {statistics.fmean(series(last, 'acc')):.4f} | {statistics.fmean(series(rows, 'rows_tied')):.0f} of "
            f"{rows[0]['rows']:.0f} | {statistics.median(rm):.3g} "
            f"| {statistics.fmean(series(rows, 'v_sign_share_planted')):.3f} / "
            f"{statistics.fmean(series(rows, 'v_sign_share_other')):.3f} "
            f"| {statistics.fmean(series(rows, 'O_rel')):.2e} | {statistics.fmean(series(rows, 'seconds')):.2f} |")
    out["arms"] = "\n".join(lines)

    # the primary family
    ctrl, pa = data["control_fp32"], data["paper_autocast"]
    tests = []
    tests.append(("P1", "s_t = Σ δ_err keeps one sign under paper:autocast", "mean s_t", bm_test(series(pa, "s"))))
    cos = lambda rows: [r["G.cos_prev"] if r["G.cos_prev"] is not None else 0.0 for r in rows]  # noqa: E731
    tests.append(("P2", "G accumulates beyond a random walk: cos(G_t, ΣG_<t), paper:autocast − control",
                  "mean paired difference", bm_test([x - y for x, y in zip(cos(pa), cos(ctrl))])))
    for pid, arm in (("P3", "paper_autocast_rowsum_fp32"), ("P4", "paper_autocast_pv_fp32"),
                     ("P5", "paper_autocast_stabilized")):
        if arm in data:
            tests.append((pid, f"{SHORT[arm]} changes s_t (paper:autocast − arm, paired)", "mean paired difference",
                          bm_test([x - y for x, y in zip(series(pa, "s"), series(data[arm], "s"))])))
    per, _ = fit_series(pa, "tied")
    for pid, key, what in (("P6", "a", "the l site's signature"), ("P7", "b", "the P̄V site's signature")):
        xs = [p[key] for p in per]
        m, sd = statistics.fmean(xs), statistics.stdev(xs)
        t = m / (sd / math.sqrt(len(xs))) if sd > 0 else float("nan")
        tests.append((pid, f"{what} in paper:autocast's O error, tied rows (fit coefficient {key}; 0: absent, "
                      f"1: that site's whole predicted error)", f"mean batch coefficient {key}",
                      (m, t, t_two_sided_p(t, len(xs) - 1))))
    adj = holm([t[3][2] for t in tests])
    lines = ["| | hypothesis | statistic | value | t (19 df) | p | Holm p | rejected at 0.05 |",
             "|---|---|---|---|---|---|---|---|"]
    for (pid, hyp, stat, (m, t, p)), pa_ in zip(tests, adj):
        lines.append(f"| {pid} | {hyp} | {stat} | {m:+.3e} | {t:+.2f} | {p:.2g} | {pa_:.2g} | "
                     f"{'**yes**' if pa_ < ALPHA else 'no'} |")
    out["primary"] = "\n".join(lines)

    # secondary, per arm (exploratory: no correction)
    lines = ["| arm | mean s_t (t) | s_t's sign share | ‖ΣG‖/Σ‖G‖ at the end (1/√T) | σ₁² share of ΣG "
             "| mean cos(G_t, ΣG_<t) (t) | ‖W_Q‖₂ − control's, end (max over the run) | planted-column O error, mean (t) "
             "| O away index (t) |", "|---|---|---|---|---|---|---|---|---|"]
    for a, rows in data.items():
        s = series(rows, "s")
        pos = sum(x > 0 for x in s)
        ms, ts, _ = bm_test(s)
        ratio = g_ratio_recomputed(rows)
        mc, tc, _ = bm_test(cos(rows))
        mo, to, _ = bm_test(series(rows, "O_err_mean_planted"))
        aw = [r["O_away"] for r in rows if r["O_away"] is not None]
        ma, ta, _ = bm_test(aw) if len(aw) >= BATCHES else (float("nan"),) * 3
        lines.append(f"| {SHORT[a]} | {ms:+.2e} ({ts:+.1f}) | {max(pos, len(s) - pos) / len(s):.3f} "
                     f"| {ratio[-1]:.4f} ({len(s) ** -0.5:.4f}) | {rows[-1]['G.sv_share']:.3f} | {mc:+.4f} ({tc:+.1f}) "
                     f"| {rows[-1]['W_Q_norm'] - ctrl[-1]['W_Q_norm']:+.2e} ({max(abs(x['W_Q_norm'] - y['W_Q_norm']) for x, y in zip(rows, ctrl)):.2e}) | {mo:+.2e} ({to:+.1f}) | {ma:+.3f} ({ta:+.1f}) |")
    out["secondary"] = "\n".join(lines)

    # exploratory: the first link, O's bias on the one-signed columns, and how much each fix removes
    lines = ["| arm | planted-column O error, mean | paper:autocast − arm, paired (t) | share of paper:autocast's "
             "bias removed |", "|---|---|---|---|"]
    base = statistics.fmean(series(pa, "O_err_mean_planted"))
    for a, rows in data.items():
        if a == "paper_autocast":
            continue
        m = statistics.fmean(series(rows, "O_err_mean_planted"))
        dm, dt, _ = bm_test([x - y for x, y in zip(series(pa, "O_err_mean_planted"), series(rows, "O_err_mean_planted"))])
        ratio = m / base
        removed = f"{1 - ratio:.1%}" if -0.05 <= ratio <= 2 else f"none: the arm's mean is {ratio:+.3g} × paper:autocast's"
        lines.append(f"| {SHORT[a]} | {m:+.3e} | {dm:+.3e} ({dt:+.1f}) | {removed} |")
    out["first_link"] = f"paper:autocast's mean error on the planted columns: {base:+.3e}\n\n" + "\n".join(lines)

    lines = ["| arm | rows | l site alone: share of ‖O_err‖² | P̄V site alone | both (fit) | a (l) | b (P̄V) |",
             "|---|---|---|---|---|---|---|"]
    for a, rows in data.items():
        for tag in ("tied", "untied"):
            _, f = fit_series(rows, tag)
            lines.append(f"| {SHORT[a]} | {tag} | {f['r2_u']:.3f} | {f['r2_w']:.3f} | {f['r2']:.3f} | {f['a']:+.3f} "
                         f"| {f['b']:+.3f} |")
    out["signature"] = "\n".join(lines)
    return out


def write(doc, out):
    """Replaces the doc's summarize blocks with the regenerated ones (the blocks must exist)."""
    text = open(doc, encoding="utf-8").read()
    for name, body in out.items():
        pat = re.compile(r"(<!-- summarize:" + name + r" -->\n)(.*?)(\n<!-- /summarize -->)", flags=re.S)
        if not pat.search(text):
            print(f"summarize --write: {doc} has no block '{name}' (add '<!-- summarize:{name} -->' and "
                  f"'<!-- /summarize -->' where it goes)")
            return 1
        text = pat.sub(lambda m: m.group(1) + body + m.group(3), text)
    with open(doc, "w", encoding="utf-8") as f:
        f.write(text)
    print(f"summarize --write: {len(out)} blocks written into {doc}")
    return 0


def check(doc, out):
    text = open(doc, encoding="utf-8").read()
    found = dict(re.findall(r"<!-- summarize:(\w+) -->\n(.*?)\n<!-- /summarize -->", text, flags=re.S))
    bad = 0
    for name, body in out.items():
        if name not in found:
            print(f"summarize --check: block '{name}' is not in {doc}")
            bad += 1
        elif found[name].strip() != body.strip():
            print(f"summarize --check: block '{name}' in {doc} differs from the data:\n--- doc\n{found[name]}\n"
                  f"--- data\n{body}")
            bad += 1
    for name in found:
        if name not in out:
            print(f"summarize --check: {doc} has a block '{name}' that summarize.py does not make")
            bad += 1
    print(f"summarize --check: {len(out) - bad if bad <= len(out) else 0} of {len(out)} blocks match {doc}")
    # The prose of the results (from "## The gate" to the next section after "## Answers") quotes
    # figures from the blocks: every decimal figure in it must occur, sign included, in what the
    # data give, as a whole number token (a sign may be left off, and an exponent of e+00), so
    # that a figure left behind by a rerun is caught too.
    start, end = text.find("## The gate"), text.find("\n## ", text.find("## Answers") + 1)
    prose = re.sub(r"<!-- summarize:\w+ -->\n.*?\n<!-- /summarize -->", "", text[start:end], flags=re.S)
    number = r"(?<![\d.])[+\-−]?\d+\.\d+(?:e[+\-−]\d+)?(?![\d.])"
    made = set()
    for token in re.findall(number, "\n".join(out.values())):
        made.update({token, token.removesuffix("e+00"), token.lstrip("+-"), token.removesuffix("e+00").lstrip("+-")})
    figures = re.findall(number, prose)
    missing = [f for f in figures if f.replace("−", "-") not in made]
    for f in missing:
        print(f"summarize --check: the figure {f} in {doc}'s results is not in what the data give")
    print(f"summarize --check: {len(figures) - len(missing)} of {len(figures)} figures in the results' prose "
          f"are in the data's blocks")
    return 1 if bad or missing or start < 0 else 0


def plot(d, sets):
    for name, data in sets.items():
        plot_set(os.path.join(d, name), data)


def plot_set(d, data):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("summarize: matplotlib is missing (apt-get install python3-matplotlib): no plot written")
        return
    fig, axes = plt.subplots(3, 3, figsize=(15, 12))
    ctrl = data["control_fp32"]
    wq = lambda rows: [x - y for x, y in zip(series(rows, "W_Q_norm"), series(ctrl, "W_Q_norm"))]  # noqa: E731
    cosg = lambda rows: _movmean([r["G.cos_prev"] or 0.0 for r in rows], 50)  # noqa: E731
    stab = "paper_autocast_stabilized"
    # (title, series, whether the stabilized arm is drawn: its errors are ~10^3 times the others')
    panels = [("running Σ s_t (the paper's Fig. 5a)", lambda rows: _cum(series(rows, "s")), True),
              ("running Σ s_t, without the stabilized arm", lambda rows: _cum(series(rows, "s")), False),
              ("‖ΣG‖/Σ‖G‖ (dashed: 1/√t)", g_ratio_recomputed, True),
              ("‖W_Q‖₂ − control's", wq, True),
              ("‖W_Q‖₂ − control's, without the stabilized arm", wq, False),
              ("cos(G_t, ΣG_<t), 50-step mean, without the stabilized arm", cosg, False),
              ("running mean of the planted-column O error, without the stabilized arm",
               lambda rows: _cummean(series(rows, "O_err_mean_planted")), False),
              ("loss (50-step mean)", lambda rows: _movmean(series(rows, "loss"), 50), True),
              ("median r of tied rows (50-step mean)",
               lambda rows: _movmean([r["r_median_tied"] or 0.0 for r in rows], 50), True)]
    for ax, (title, f, with_stab) in zip(axes.flat, panels):
        for a, rows in data.items():
            if a == stab and not with_stab:
                ax.plot([], [])  # keep each arm's colour
                continue
            ys = f(rows)
            ax.plot(range(len(ys)), ys, label=SHORT[a], lw=1)
        if title.startswith("‖ΣG‖"):
            ax.plot(range(len(ctrl)), [(t + 1) ** -0.5 for t in range(len(ctrl))], "k--", lw=0.8)
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("fine-tuning step")
    axes.flat[0].legend(fontsize=8)
    fig.tight_layout()
    path = os.path.join(d, "training.png")
    fig.savefig(path, dpi=70)
    print(f"wrote {path}")


def _cum(xs):
    out, s = [], 0.0
    for x in xs:
        s += x
        out.append(s)
    return out


def _cummean(xs):
    return [c / (i + 1) for i, c in enumerate(_cum(xs))]


def _movmean(xs, w):
    c = [0.0] + _cum(xs)
    return [(c[i + 1] - c[max(0, i + 1 - w)]) / (i + 1 - max(0, i + 1 - w)) for i in range(len(xs))]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dir", nargs="?", default="docs/data/training/decisive")
    ap.add_argument("--check", metavar="DOC", help="compare the doc's summarize blocks with the data; exit 1 if any differs")
    ap.add_argument("--write", metavar="DOC", help="regenerate the doc's summarize blocks in place")
    ap.add_argument("--plot", action="store_true", help="also write DIR/SET/training.png (matplotlib)")
    args = ap.parse_args(argv)
    if not os.path.isdir(args.dir):
        ap.error(f"no such directory: {args.dir[:200]}")
    out, sets = blocks(args.dir)
    if args.check:
        return check(args.check, out)
    if args.write:
        return write(args.write, out)
    for name, body in out.items():
        print(f"<!-- summarize:{name} -->\n{body}\n<!-- /summarize -->\n")
    if args.plot:
        plot(args.dir, sets)
    return 0


if __name__ == "__main__":
    sys.exit(main())
