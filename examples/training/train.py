"""The paper's causal chain measured in a training loop (docs/training.md).

A small decoder-only transformer learns a generated task (the running mode of a token stream)
with AdamW. Every arm starts from the same weights and sees the same batches; only the
attention's arithmetic differs (bf16emu.torch.attention under a policy; the linear layers,
norms and loss are PyTorch float32 in every arm). Each step also runs an fp32 shadow pass on
the arm's own weights and batch (PyTorch float32 attention) and logs the error of dQ, dK, dV
and of the weight gradients against it, the running sum of those errors (norm ratio, top
singular value share, cosine of each step's error with the sum so far), the loss, ‖W_Q‖₂ and
‖W_K‖₂ per layer and the count of P̄ = 1 entries (the forward ledger's p_equals_one).

    PYTHONPATH=build/python nice -n 10 /usr/bin/python3 examples/training/train.py \\
        --steps 200 --out docs/data/training          # all six arms
    PYTHONPATH=build/python /usr/bin/python3 examples/training/train.py --quick --out /tmp/q

The task. Each sequence is BOS followed by tokens drawn from a skewed distribution of its own;
the label at position t is the most frequent token among positions 1..t (ties: the smallest).
No positional embedding: a causal model can count without one, and then two equal tokens
have equal keys in layer 1, so every query gives them exactly equal scores. The natural
solution averages over the prefix (a head that attends to a token type or to everything):
its rows have their maximum many times, which is where P̄ = exp(S − m) = 1 exactly at
several places; the BOS key is unique and is where a head parks attention it does not need
(a sink). Later layers tie where BF16 scores collapse (paper:autocast rounds S to BF16).
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import sys
import time

try:
    import torch

    import bf16emu.torch as et
except ImportError as err:  # the CTest entry point reports SKIP (77) without torch or the module
    print(f"SKIPPED: {err} (needs python3-torch and the bf16emu module on PYTHONPATH)")
    sys.exit(77)

VOCAB = 16
BOS = VOCAB

ARMS = {
    "fp32": {"policy": "fp32", "backward": "tiled"},
    "fa2_sm90": {"policy": "fa2:sm90", "backward": "tiled"},
    "paper_autocast": {"policy": "paper:autocast", "backward": "reference"},
    "paper_autocast_rowsum_fp32": {"policy": "paper:autocast", "backward": "reference",
                                   "sites": {"row_sum": "fp32"}},
    "paper_autocast_pv_fp32": {"policy": "paper:autocast", "backward": "reference",
                               "sites": {"pv_to_bf16": "fp32", "o_update": "fp32"}},
    "paper_autocast_stabilized": {"policy": "paper:autocast", "backward": "reference", "variant": "stabilized",
                                  "beta": 2.0},
}


def batch(step: int, seed: int, b: int, n: int):
    """The batch of a step: the same for every arm (a generator seeded by (seed, step))."""
    g = torch.Generator().manual_seed(seed * 1_000_003 + step)
    w = torch.rand(b, VOCAB, generator=g) ** 4  # skewed per-sequence token distribution
    toks = torch.multinomial(w, n - 1, replacement=True, generator=g)
    x = torch.cat([torch.full((b, 1), BOS), toks], dim=1)
    counts = torch.nn.functional.one_hot(toks, VOCAB).cumsum(dim=1)
    # the running mode; argmax returns the first (smallest) index among equal counts
    y = torch.cat([torch.full((b, 1), -100), counts.argmax(dim=-1)], dim=1)
    return x, y


class Block(torch.nn.Module):
    def __init__(self, d_model: int, heads: int):
        super().__init__()
        self.heads = heads
        self.ln1 = torch.nn.LayerNorm(d_model)
        self.qkv = torch.nn.Linear(d_model, 3 * d_model, bias=False)
        self.proj = torch.nn.Linear(d_model, d_model, bias=False)
        self.ln2 = torch.nn.LayerNorm(d_model)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(d_model, 4 * d_model), torch.nn.GELU(),
                                       torch.nn.Linear(4 * d_model, d_model))
        self.qkv_seen = self.o_seen = None

    def forward(self, x):
        b, n, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        if torch.is_grad_enabled():
            for t in (q, k, v):
                t.retain_grad()
        self.qkv_seen = (q, k, v)
        o = et.scaled_dot_product_attention(q, k, v, is_causal=True)
        if torch.is_grad_enabled():
            o.retain_grad()
        self.o_seen = o
        x = x + self.proj(o.transpose(1, 2).reshape(b, n, c))
        return x + self.mlp(self.ln2(x))


class Decoder(torch.nn.Module):
    def __init__(self, layers: int, d_model: int, heads: int):
        super().__init__()
        self.emb = torch.nn.Embedding(VOCAB + 1, d_model)
        self.blocks = torch.nn.ModuleList(Block(d_model, heads) for _ in range(layers))
        self.ln = torch.nn.LayerNorm(d_model)
        self.head = torch.nn.Linear(d_model, VOCAB, bias=False)

    def forward(self, x):
        h = self.emb(x)
        for blk in self.blocks:
            h = blk(h)
        return self.head(self.ln(h))


def loss_of(model, x, y):
    logits = model(x)
    return torch.nn.functional.cross_entropy(logits.reshape(-1, VOCAB), y.reshape(-1), ignore_index=-100)


def gradients(model, x, y):
    """loss.backward() on the model as it is served now; returns the loss, the accuracy, the
    parameter gradients by name and each layer's (dQ, dK, dV, O, dO)."""
    model.zero_grad(set_to_none=True)
    logits = model(x)
    loss = torch.nn.functional.cross_entropy(logits.reshape(-1, VOCAB), y.reshape(-1), ignore_index=-100)
    loss.backward()
    mask = y >= 0
    acc = (logits.argmax(-1)[mask] == y[mask]).float().mean().item()
    grads = {name: p.grad.detach().clone() for name, p in model.named_parameters()}
    dqkv = [tuple(t.grad.detach().clone() for t in blk.qkv_seen) + (blk.o_seen.detach().clone(),
                                                                     blk.o_seen.grad.detach().clone())
            for blk in model.blocks]
    return loss.item(), acc, grads, dqkv


class Running:
    """The running sum of one quantity's error: ‖Σe‖ / Σ‖e‖, the top singular value's share of
    the sum's squared Frobenius norm (the sum seen as a matrix with the quantity's last axis as
    columns), and the cosine of each step's error with the sum before it."""

    def __init__(self):
        self.sum, self.norms = None, 0.0

    def add(self, e):
        e = e.double()
        n = e.norm().item()
        cos = None
        if self.sum is not None:
            denom = self.sum.norm().item() * n
            cos = (self.sum * e).sum().item() / denom if denom > 0 else None
            self.sum += e
        else:
            self.sum = e.clone()
        self.norms += n
        s = self.sum.norm().item()
        sv = torch.linalg.svdvals(self.sum.reshape(-1, self.sum.shape[-1]))
        share = (sv[0] ** 2 / (sv ** 2).sum()).item() if s > 0 else None
        return {"norm": n, "mean": e.mean().item(), "ratio": s / self.norms if self.norms > 0 else None,
                "sv_share": share, "cos_with_sum": cos}


def away(e, ref):
    """mean(e * sign(ref)) / mean|e|: +1 when every error points away from zero (grows the
    magnitude of the reference value), -1 when every one points toward it, ~0 when unbiased."""
    e = e.double()
    m = e.abs().mean().item()
    return (e * torch.sign(ref.double())).mean().item() / m if m > 0 else None


def spectral(w):
    return torch.linalg.matrix_norm(w.double(), ord=2).item()


def run_arm(name, cfg, args, log):
    torch.manual_seed(args.seed)
    model = Decoder(args.layers, args.d_model, args.heads)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.95), weight_decay=0.1)
    att = dict(cfg, threads=args.threads)
    c = args.d_model
    tracked = {}
    for li in range(args.layers):
        tracked.update({f"L{li}.{q}": Running() for q in ("O", "delta", "dQ", "dK", "dV", "W_Q", "W_K", "W_V", "W_O")})
    tracked["all_weights"] = Running()
    rows, t_start = [], time.time()
    for step in range(args.steps):
        t0 = time.time()
        x, y = batch(step, args.seed, args.batch, args.seq)
        em = et.emulate(model, attention=att, ledger="forward")
        try:
            loss, acc, g_arm, d_arm = gradients(model, x, y)
        finally:
            em.restore()
        t_arm = time.time() - t0
        ties = sum(led["p_equals_one"]["ones"] for led in em.ledgers)
        tied_rows = sum(led["p_equals_one"]["row_blocks_tied"] for led in em.ledgers)
        entries = sum(led["p_equals_one"]["entries"] for led in em.ledgers)
        shadow_loss, _, g_ref, d_ref = gradients(model, x, y)  # fp32 shadow: same weights, same batch
        row = {"step": step, "loss": loss, "acc": acc, "shadow_loss": shadow_loss, "p_equals_one": ties,
               "p_entries": entries, "row_blocks_tied": tied_rows}
        for li, blk in enumerate(model.blocks):
            wq, wk = blk.qkv.weight[:c], blk.qkv.weight[c:2 * c]
            row[f"L{li}.W_Q_norm"], row[f"L{li}.W_K_norm"] = spectral(wq), spectral(wk)
            # O and delta = rowsum(dO o O) (binary64 here, from each pass's own O and dO): the
            # forward error and the term through which it enters the backward
            o_a, do_a, o_r, do_r = d_arm[li][3], d_arm[li][4], d_ref[li][3], d_ref[li][4]
            e = (o_a - o_r).transpose(1, 2).reshape(-1, args.d_model)
            row.update({f"L{li}.O.{k}": v for k, v in tracked[f"L{li}.O"].add(e).items()})
            row[f"L{li}.O.rel"] = e.norm().item() / max(o_r.norm().item(), 1e-30)
            # away-from-zero index: mean(e * sign(O)) / mean|e|, +1 when every error grows |O|
            row[f"L{li}.O.away"] = away(e, (o_r.transpose(1, 2).reshape(-1, args.d_model)))
            delta_a, delta_r = ((do.double() * o.double()).sum(-1) for do, o in ((do_a, o_a), (do_r, o_r)))
            e = (delta_a - delta_r).reshape(-1, args.seq)
            row.update({f"L{li}.delta.{k}": v for k, v in tracked[f"L{li}.delta"].add(e).items()})
            row[f"L{li}.delta.rel"] = e.norm().item() / max(delta_r.norm().item(), 1e-30)
            row[f"L{li}.delta.away"] = away(e, delta_r.reshape(-1, args.seq))
            for j, q in enumerate(("dQ", "dK", "dV")):
                e = (d_arm[li][j] - d_ref[li][j]).transpose(1, 2).reshape(-1, args.d_model)
                row.update({f"L{li}.{q}.{k}": v for k, v in tracked[f"L{li}.{q}"].add(e).items()})
                row[f"L{li}.{q}.rel"] = e.norm().item() / max(d_ref[li][j].norm().item(), 1e-30)
            ew = g_arm[f"blocks.{li}.qkv.weight"] - g_ref[f"blocks.{li}.qkv.weight"]
            for j, q in enumerate(("W_Q", "W_K", "W_V")):
                row.update({f"L{li}.{q}.{k}": v for k, v in tracked[f"L{li}.{q}"].add(ew[j * c:(j + 1) * c]).items()})
            eo = g_arm[f"blocks.{li}.proj.weight"] - g_ref[f"blocks.{li}.proj.weight"]
            row.update({f"L{li}.W_O.{k}": v for k, v in tracked[f"L{li}.W_O"].add(eo).items()})
        e_all = torch.cat([(g_arm[k] - g_ref[k]).reshape(-1) for k in g_arm]).reshape(1, -1)
        g_all = torch.cat([g_ref[k].reshape(-1) for k in g_ref])
        row.update({f"all_weights.{k}": v for k, v in tracked["all_weights"].add(e_all).items()})
        row["all_weights.rel"] = e_all.norm().item() / max(g_all.norm().item(), 1e-30)
        # the arm trains on its own gradients
        for name_p, p in model.named_parameters():
            p.grad = g_arm[name_p]
        opt.step()
        row["seconds"] = time.time() - t0
        row["seconds_arm"] = t_arm
        rows.append(row)
        if not math.isfinite(loss):
            log(f"{name}: step {step}: loss is not finite; stopping the arm")
            break
        if step % args.log_every == 0 or step == args.steps - 1:
            log(f"{name}: step {step + 1}/{args.steps} loss {loss:.4f} acc {acc:.3f} "
                f"|W_Q|2 {row['L0.W_Q_norm']:.3f} P=1 {ties} ratio(W_Q L0) {row['L0.W_Q.ratio']:.3f} "
                f"{row['seconds']:.2f} s/step ({time.time() - t_start:.0f} s)")
    return rows


def write_outputs(out, name, cfg, args, rows):
    os.makedirs(out, exist_ok=True)
    keys = list(rows[0].keys())
    with open(os.path.join(out, f"{name}.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        for r in rows:
            w.writerow({k: ("" if r.get(k) is None else (f"{r[k]:.8g}" if isinstance(r[k], float) else r[k]))
                        for k in keys})
    meta = {"arm": name, "attention": cfg, "config": vars(args), "steps_run": len(rows),
            "mean_seconds_per_step": sum(r["seconds"] for r in rows) / len(rows),
            "mean_seconds_arm_pass": sum(r["seconds_arm"] for r in rows) / len(rows),
            "final": rows[-1]}
    with open(os.path.join(out, f"{name}.json"), "w") as f:
        json.dump(meta, f, indent=1, sort_keys=True)
    return meta


def plot(out, results, log):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log("matplotlib is missing (apt-get install python3-matplotlib): no plots written")
        return
    base = results.get("fp32")
    panels = [("loss", "loss (10-step mean)"), ("L0.W_Q_norm", "‖W_Q‖₂ layer 0, minus the fp32 arm's"),
              ("L1.W_Q_norm", "‖W_Q‖₂ layer 1, minus the fp32 arm's"),
              ("L0.W_Q.ratio", "‖Σe‖/Σ‖e‖, dW_Q layer 0 (dashed: 1/√t)"),
              ("L0.W_Q.sv_share", "σ₁² share of Σe, dW_Q layer 0"),
              ("L0.delta.ratio", "‖Σe‖/Σ‖e‖, δ layer 0 (dashed: 1/√t)"),
              ("L0.W_Q.cos_with_sum", "cos(e_t, Σe), dW_Q layer 0"),
              ("L0.delta.mean", "signed mean of the δ error, layer 0"), ("p_equals_one", "entries P = 1 (ledger)")]
    fig, axes = plt.subplots(3, 3, figsize=(15, 11))
    for ax, (key, title) in zip(axes.flat, panels):
        for name, rows in results.items():
            ys = [r.get(key) for r in rows]
            if key == "loss":
                ys = [sum(ys[max(0, i - 9):i + 1]) / len(ys[max(0, i - 9):i + 1]) for i in range(len(ys))]
            if key.endswith("W_Q_norm") and base is not None:
                ys = [y - b[key] for y, b in zip(ys, base)]
            xs = [r["step"] for r, v in zip(rows, ys) if v is not None]
            ax.plot(xs, [v for v in ys if v is not None], label=name, lw=1)
        if key.endswith(".ratio"):
            steps = range(1, 1 + max(len(rows) for rows in results.values()))
            ax.plot([t - 1 for t in steps], [t ** -0.5 for t in steps], "k--", lw=0.8)
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("step")
    axes.flat[0].legend(fontsize=7)
    fig.tight_layout()
    path = os.path.join(out, "training.png")
    fig.savefig(path, dpi=70)
    log(f"wrote {path}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--arms", default=",".join(ARMS), help="comma-separated: " + ", ".join(ARMS))
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--d-model", type=int, default=128)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=0, help="bf16emu worker threads (0: all cores)")
    ap.add_argument("--log-every", type=int, default=10)
    ap.add_argument("--out", default="training-out")
    ap.add_argument("--quick", action="store_true", help="3 steps of a tiny model (a smoke test)")
    ap.add_argument("--no-plot", action="store_true")
    ap.add_argument("--plot-only", action="store_true",
                    help="no training: plot the arms' CSV files found in --out and write summary.json")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)  # PyTorch's own ops are small here; bf16emu's core takes --threads
    if args.quick:
        args.steps, args.layers, args.d_model, args.heads, args.seq, args.batch = 3, 2, 32, 2, 32, 2
        args.log_every = 1
    arms = [a for a in args.arms.split(",") if a]
    for a in arms:
        if a not in ARMS:
            ap.error(f"unknown arm '{a[:80]}' ({', '.join(ARMS)})")
    if args.d_model % args.heads or args.steps < 1:
        ap.error("--d-model must be a multiple of --heads and --steps >= 1")

    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    results = {}
    for name in arms:
        if args.plot_only:
            path = os.path.join(args.out, f"{name}.csv")
            if os.path.exists(path):
                results[name] = read_csv(path)
            continue
        rows = run_arm(name, ARMS[name], args, log)
        write_outputs(args.out, name, ARMS[name], args, rows)
        results[name] = rows
    if not args.no_plot:
        plot(args.out, results, log)
    return 0


def read_csv(path):
    rows = []
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            rows.append({k: (None if v == "" else float(v)) for k, v in r.items()})
    return rows


if __name__ == "__main__":
    sys.exit(main())
