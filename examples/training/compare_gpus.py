"""Would this training run have gone differently on an A100 than on an H100? (issue 43 item 5)

A small GPT (hand-written attention: att = (q @ k^T) * scale; softmax; att @ v) is trained
three times from the same initial weights on the same batches:

  sm80  every matrix product of the forward and backward on the A100's tensor-core model
        (bf16emu.torch.emulate(model, gpu="sm80", dtype="bf16"): operands rounded to BF16,
        the preset's block accumulation, FP32 output)
  sm90  the same on the H100's model (gpu="sm90")
  fp32  plain PyTorch FP32 on the host

Everything the dispatch mode leaves to the host (softmax, layer norm, the loss, AdamW's update
of the FP32 weights) is the same code in every arm. The task: next-character prediction on the
project's own documentation (docs/*.md, concatenated in sorted name order, character level).
Per step it records each arm's loss and the relative L2 distance of all parameters between
each pair of arms, ||a - b|| / ((||a|| + ||b||) / 2), and writes steps.csv, run.json and (with
matplotlib) compare_gpus.png under --out. --control adds a fourth arm, FP32 from the same weights
nudged by one ulp each: how fast a perturbation far below BF16's rounding grows by itself.
docs/compare-gpus.md says what the committed run shows.

    PYTHONPATH=build/python /usr/bin/python3 examples/training/compare_gpus.py \\
        --out docs/data/compare_gpus                       # 300 steps, one thread
    PYTHONPATH=build/python /usr/bin/python3 examples/training/compare_gpus.py --quick --out /tmp/cg
    /usr/bin/python3 examples/training/compare_gpus.py --check docs/data/compare_gpus \\
        [--doc docs/compare-gpus.md]    # reprints every number the doc quotes (no torch needed)
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import inspect
import json
import math
import os
import sys
import time

ARMS = ("sm80", "sm90", "fp32")
PAIRS = (("sm80", "sm90"), ("sm90", "fp32"), ("sm80", "fp32"))
# --control: a fourth arm, FP32 from the same weights each nudged by one ulp (toward +inf): how fast
# a perturbation far smaller than BF16's rounding grows on its own.
CONTROL = "fp32_nudged"
REPO = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


def corpus_text(docs_dir: str) -> str:
    names = sorted(n for n in os.listdir(docs_dir) if n.endswith(".md"))
    if not names:
        raise SystemExit(f"argument '--docs': no .md files in {docs_dir}")
    parts = []
    for n in names:
        with open(os.path.join(docs_dir, n), encoding="utf-8") as f:
            parts.append(f.read())
    return "\n".join(parts)


def corpus_commit(docs_dir: str) -> str:
    """The git commit the corpus was read at ('+ changes' if *.md files there differ), or '?'."""
    import subprocess
    try:
        head = subprocess.run(["git", "-C", docs_dir, "rev-parse", "HEAD"], capture_output=True, text=True,
                              check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", docs_dir, "status", "--porcelain", "--", "."], capture_output=True,
                               text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return "?"
    return head + (" + changes" if any(ln.endswith(".md") for ln in dirty.splitlines()) else "")


def make_model_classes():
    """The GPT, defined once torch is imported (python_model_step.py uses it too)."""
    import torch

    class Block(torch.nn.Module):
        def __init__(self, d_model: int, heads: int, seq: int):
            super().__init__()
            self.heads = heads
            self.ln1 = torch.nn.LayerNorm(d_model)
            self.qkv = torch.nn.Linear(d_model, 3 * d_model)
            self.proj = torch.nn.Linear(d_model, d_model)
            self.ln2 = torch.nn.LayerNorm(d_model)
            self.fc = torch.nn.Linear(d_model, 4 * d_model)
            self.out = torch.nn.Linear(4 * d_model, d_model)
            self.register_buffer("causal", torch.ones(seq, seq).tril().bool().logical_not(), persistent=False)

        def forward(self, x):
            b, n, c = x.shape
            hd = c // self.heads
            q, k, v = self.qkv(self.ln1(x)).split(c, dim=-1)
            q, k, v = (t.view(b, n, self.heads, hd).transpose(1, 2) for t in (q, k, v))
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hd))
            att = att.masked_fill(self.causal[:n, :n], float("-inf"))
            att = att.softmax(-1)
            y = (att @ v).transpose(1, 2).reshape(b, n, c)
            x = x + self.proj(y)
            return x + self.out(torch.nn.functional.gelu(self.fc(self.ln2(x))))

    class GPT(torch.nn.Module):
        def __init__(self, vocab: int, d_model: int, layers: int, heads: int, seq: int):
            super().__init__()
            self.tok = torch.nn.Embedding(vocab, d_model)
            self.pos = torch.nn.Embedding(seq, d_model)
            self.blocks = torch.nn.ModuleList(Block(d_model, heads, seq) for _ in range(layers))
            self.ln = torch.nn.LayerNorm(d_model)
            self.head = torch.nn.Linear(d_model, vocab, bias=False)

        def forward(self, idx, targets):
            h = self.tok(idx) + self.pos(torch.arange(idx.shape[1]))
            for blk in self.blocks:
                h = blk(h)
            logits = self.head(self.ln(h))
            return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))

    return GPT


def rel_dist(a, b) -> float:
    import torch
    d = torch.linalg.vector_norm(a - b).item()
    s = (torch.linalg.vector_norm(a).item() + torch.linalg.vector_norm(b).item()) / 2
    return d / s if s > 0 else 0.0


def train(args) -> dict:
    try:
        import torch

        import bf16emu.torch as et
    except ImportError as err:  # the CTest entry point reports SKIP (77) without torch or the module
        print(f"SKIPPED: {err} (needs python3-torch and the bf16emu module on PYTHONPATH)")
        sys.exit(77)
    torch.set_num_threads(args.threads)
    text, commit = corpus_text(args.docs), corpus_commit(args.docs)  # the commit when it was read
    chars = sorted(set(text))
    stoi = {c: i for i, c in enumerate(chars)}
    data = torch.tensor([stoi[c] for c in text], dtype=torch.long)
    GPT = make_model_classes()
    torch.manual_seed(args.seed)
    first = GPT(len(chars), args.d_model, args.layers, args.heads, args.seq)
    arms = ARMS + ((CONTROL,) if args.control else ())
    pairs = PAIRS + ((("fp32", CONTROL),) if args.control else ())
    models = {arm: GPT(len(chars), args.d_model, args.layers, args.heads, args.seq) for arm in arms}
    for m in models.values():
        m.load_state_dict(first.state_dict())
    if args.control:
        with torch.no_grad():
            for prm in models[CONTROL].parameters():
                prm.copy_(torch.nextafter(prm, torch.full_like(prm, math.inf)))
    opts = {arm: torch.optim.AdamW(m.parameters(), lr=args.lr, weight_decay=0.01) for arm, m in models.items()}
    rows, reports, seconds = [], {}, {arm: 0.0 for arm in arms}
    t_start = time.perf_counter()
    for step in range(1, args.steps + 1):
        g = torch.Generator().manual_seed(args.data_seed * 1_000_003 + step)
        starts = torch.randint(0, len(data) - args.seq - 1, (args.batch,), generator=g)
        x = torch.stack([data[s:s + args.seq] for s in starts])
        y = torch.stack([data[s + 1:s + args.seq + 1] for s in starts])
        row = {"step": step}
        for arm in arms:
            model = models[arm]
            t0 = time.perf_counter()
            model.zero_grad(set_to_none=True)
            if arm.startswith("fp32"):
                loss = model(x, y)
                loss.backward()
            else:
                handle = et.emulate(model, gpu=arm, dtype="bf16")
                with handle as m:
                    loss = m(x, y)
                    loss.backward()
                if step == 1:
                    reports[arm] = handle.report_dict()
            opts[arm].step()
            seconds[arm] += time.perf_counter() - t0
            row[f"loss_{arm}"] = float(loss.item())
        flat = {arm: torch.cat([p.detach().reshape(-1) for p in m.parameters()]) for arm, m in models.items()}
        for a, b in pairs:
            row[f"div_{a}_{b}"] = rel_dist(flat[a], flat[b])
        rows.append(row)
        if step == 1 or step % args.log_every == 0 or step == args.steps:
            el = time.perf_counter() - t_start
            print(f"step {step}/{args.steps}  " + "  ".join(f"{arm} {row['loss_' + arm]:.4f}" for arm in arms) +
                  f"  div sm80-sm90 {row['div_sm80_sm90']:.3e}  ({el:.0f} s)", file=sys.stderr, flush=True)
    import bf16emu
    return {"arms": list(arms), "pairs": [list(q) for q in pairs],
            "config": {k: v for k, v in vars(args).items() if k not in ("out", "check", "doc", "no_plot")},
            "corpus": {"files": "*.md of --docs, sorted by name", "chars": len(text), "vocab": len(chars),
                       "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
                       "git_commit": commit},
            "parameters": sum(p.numel() for p in first.parameters()),
            "torch": torch.__version__, "bf16emu": getattr(bf16emu, "__version__", "?"),
            "emulate_signature": str(inspect.signature(et.emulate)), "threads": torch.get_num_threads(),
            "seconds": seconds, "step1_report": reports, "rows": rows}


def write(out: str, run: dict, plot: bool) -> None:
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "run.json"), "w") as f:
        json.dump(run, f, indent=1, sort_keys=True)
        f.write("\n")
    rows = run["rows"]
    with open(os.path.join(out, "steps.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        for r in rows:
            w.writerow({k: (f"{v:.9g}" if isinstance(v, float) else v) for k, v in r.items()})
    if not plot:
        return
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not found: no plot (steps.csv and run.json are written)", file=sys.stderr)
        return
    steps = [r["step"] for r in rows]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    for arm in run["arms"]:
        ax1.plot(steps, [r["loss_" + arm] for r in rows], label=arm, lw=1)
    ax1.set_xlabel("step"), ax1.set_ylabel("training loss"), ax1.legend(), ax1.set_title("loss")
    for a, b in run["pairs"]:
        ax2.semilogy(steps, [max(r[f"div_{a}_{b}"], 1e-12) for r in rows], label=f"{a} vs {b}", lw=1)
    ax2.set_xlabel("step"), ax2.set_ylabel("||a - b|| / mean(||a||, ||b||)"), ax2.legend()
    ax2.set_title("weight divergence between arms")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "compare_gpus.png"), dpi=110)
    plt.close(fig)


def summary(run: dict) -> str:
    """Every number docs/compare-gpus.md quotes, from the run's data alone."""
    rows, cfg = run["rows"], run["config"]
    n = len(rows)
    lines = [f"steps {n}, seed {cfg['seed']}, data seed {cfg['data_seed']}, batch {cfg['batch']} x seq {cfg['seq']}, "
             f"d_model {cfg['d_model']}, layers {cfg['layers']}, heads {cfg['heads']}, "
             f"vocab {run['corpus']['vocab']}, parameters {run['parameters']}",
             f"corpus {run['corpus']['chars']} characters, sha256 {run['corpus']['sha256'][:16]}"]
    lines.append("seconds: " + ", ".join(f"{a} {run['seconds'][a]:.1f}" for a in run["arms"]))
    w = max(1, n // 10)
    for arm in run["arms"]:
        first = sum(r["loss_" + arm] for r in rows[:w]) / w
        last = sum(r["loss_" + arm] for r in rows[-w:]) / w
        lines.append(f"loss {arm}: step 1 {rows[0]['loss_' + arm]:.4f}, mean of first {w} {first:.4f}, "
                     f"mean of last {w} {last:.4f}")
    for a, b in run["pairs"]:
        d = [r[f"div_{a}_{b}"] for r in rows]
        dl = [abs(r["loss_" + a] - r["loss_" + b]) for r in rows]
        first_nz = next((r["step"] for r in rows if r[f"div_{a}_{b}"] > 0), None)
        marks = sorted({s for s in (1, 10, 30, 100, 300, 1000) if s <= n} | {n})
        lines.append(f"divergence {a}-{b}: first nonzero at step {first_nz}; " +
                     ", ".join(f"step {s} {d[s - 1]:.3e}" for s in marks) +
                     f"; max |loss difference| {max(dl):.4f}, mean over the last {w} steps "
                     f"{sum(dl[-w:]) / w:.4f}")
        h = n // 2
        if h >= 1 and d[h - 1] > 0:
            lines.append(f"  growth {a}-{b} from step {h} to {n}: x{d[n - 1] / d[h - 1]:.2f}, "
                         f"x{(d[n - 1] / d[h - 1]) ** (100 / max(n - h, 1)):.3g} per 100 steps")
    return "\n".join(lines)


def check(data_dir: str, doc: str | None) -> int:
    with open(os.path.join(data_dir, "run.json")) as f:
        block = summary(json.load(f))
    print(block)
    if doc is None:
        return 0
    with open(doc, encoding="utf-8") as f:
        text = f.read()
    if block not in text:
        print(f"\n{doc} does not quote this block verbatim (regenerate it with --check)", file=sys.stderr)
        return 1
    print(f"\n{doc} quotes this block verbatim")
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="example:\n  PYTHONPATH=build/python /usr/bin/python3 examples/training/compare_gpus.py "
               "--steps 300 --out docs/data/compare_gpus")
    p.add_argument("--steps", type=int, default=300, help="training steps per arm (default 300)")
    p.add_argument("--out", default="compare_gpus_out", help="output folder (steps.csv, run.json, compare_gpus.png)")
    p.add_argument("--quick", action="store_true", help="a tiny model (smoke test): d_model 16, seq 16, batch 2")
    p.add_argument("--seed", type=int, default=0, help="initial weights' seed (default 0)")
    p.add_argument("--data-seed", type=int, default=1, help="batches' seed (default 1)")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq", type=int, default=64)
    p.add_argument("--d-model", type=int, default=128)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--threads", type=int, default=1, help="torch.set_num_threads (default 1)")
    p.add_argument("--log-every", type=int, default=25, help="progress line every N steps (stderr)")
    p.add_argument("--docs", default=os.path.join(REPO, "docs"), help="folder whose *.md files are the corpus")
    p.add_argument("--control", action="store_true",
                   help="a fourth arm: FP32 from the same weights nudged by one ulp each (how fast a tiny "
                        "perturbation grows by itself)")
    p.add_argument("--no-plot", action="store_true", help="skip the PNG")
    p.add_argument("--check", metavar="DIR", help="reprint the doc's numbers from DIR/run.json and exit")
    p.add_argument("--doc", help="with --check: fail unless this file quotes the block verbatim")
    args = p.parse_args(argv)
    if args.check:
        return check(args.check, args.doc)
    if args.quick:
        args.batch, args.seq, args.d_model, args.heads = 2, 16, 16, 2
    for name in ("steps", "batch", "seq", "d_model", "layers", "heads", "threads", "log_every"):
        if getattr(args, name) < 1:
            p.error(f"argument '--{name.replace('_', '-')}': must be >= 1, got {getattr(args, name)}")
    if args.d_model % args.heads:
        p.error(f"argument '--heads': {args.heads} does not divide --d-model {args.d_model}")
    run = train(args)
    write(args.out, run, not args.no_plot)
    print(summary(run))
    print(f"wrote {args.out}/run.json, steps.csv" + ("" if args.no_plot else ", compare_gpus.png"), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
