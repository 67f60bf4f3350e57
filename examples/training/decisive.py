"""The decisive experiment of docs/training.md: does biased BF16 rounding in attention
accumulate in training, and through which site, the row sum l or P̄V?

A small decoder learns the running maximum of a token stream in plain FP32 PyTorch until it
plateaus (the pre-training stage, a checkpoint). Every arm then fine-tunes from that checkpoint
with the same batches and the authors' optimizer (AdamW, weight decay 0, gradient clipping at
1.0, linear warm-up); only layer 0's attention arithmetic differs, through
bf16emu.torch.attention under the arm's policy. Layer 1, the linear layers, norms, loss and
optimizer are FP32 in every arm.

The task is built to put layer 0 in the regime of the paper's trigger (the gate, logged and
checked before the fine-tuning):
  * queries and keys see the token's identity only (no position), so every earlier occurrence
    of the running maximum gets exactly the row's largest score: P̄ = exp(S − m) = 1 at k > 1
    places; the values see the token AND its position (a learned positional embedding on the
    value path), so the tied V rows differ and their sum is not the exact k·v;
  * tokens are drawn with weights rising with their value, so the maximum repeats, and a
    trained model attends sharply to it: r = l − k, the mass outside the tied entries, is small;
  * half of each head's V columns are −softplus(·) − PLANT, negative by construction, so those
    columns keep one sign, as the paper's feature 20 mostly does.

What each step measures, in layer 0, against a binary64 attention on the SAME BF16-rounded
q, k, v (every arm rounds them; the reference is the exact policy up to binary64's rounding)
and the SAME dO (the arm's own backward): O_err, δ_err = rowsum(dO ∘ O_err) (the paper's
δ_lp − δ_hp), s_t = Σ δ_err, the δ-error term of W_Q's gradient
G_t = −α (P K)ᵀ diag(δ_err) X (per head; the paper's eq. 2), its norm and its inner product with
the sum of the earlier G (from which ‖ΣG‖ is recomputed exactly), ‖W_Q‖₂ per head, the
regime (tied rows, r, k), V's sign shares, and the two sites' signatures: the error that the
l site predicts (O_ref · (l / RN16(l) − 1)) and the one that the P̄V site predicts
((RN16(P̄V) − P̄V) / l), with the least-squares fit of O_err on both.

    PYTHONPATH=build/python /usr/bin/python3 examples/training/decisive.py --out docs/data/training/decisive \\
        --backward authors --arms paper_autocast,paper_autocast_rowsum_fp32,paper_autocast_pv_fp32,paper_autocast_stabilized
    PYTHONPATH=build/python /usr/bin/python3 examples/training/decisive.py --out docs/data/training/decisive  # reference/
    /usr/bin/python3 examples/training/summarize.py docs/data/training/decisive
    PYTHONPATH=build/python /usr/bin/python3 examples/training/decisive.py --quick --out /tmp/q   # ~30 s
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

# The arms (docs/data/training/decisive/PLAN.md names them before the runs). The paper arms take
# --backward (reference: bf16emu's reference backward under paper:autocast; authors: the authors'
# attention.py backward, backward_authors.hpp); the fp32 arms always use the reference backward
# (the tiled one does not model paper:autocast or site overrides).
ARMS = {
    "control_fp32": {"policy": "fp32", "backward": "reference"},
    "paper_autocast": {"policy": "paper:autocast", "backward": "reference"},
    "paper_autocast_rowsum_fp32": {"policy": "paper:autocast", "backward": "reference",
                                   "sites": {"row_sum": "fp32"}},
    "paper_autocast_pv_fp32": {"policy": "paper:autocast", "backward": "reference",
                               "sites": {"pv_to_bf16": "fp32", "o_update": "fp32"}},
    "paper_autocast_stabilized": {"policy": "paper:autocast", "backward": "reference",
                                  "variant": "stabilized", "beta": 2.0},
    # a noise-matched placebo: the control's O stochastically rounded to BF16 (unbiased, errors of
    # BF16's size), the reference for what BF16-sized noise alone does to the trajectory
    "placebo_sr": {"policy": "fp32", "backward": "reference", "sr_output": True},
}


def batch(step: int, seed: int, b: int, n: int, label_noise: float = 0.0):
    """The batch of a step (a generator seeded by (seed, step)): BOS, then n − 1 tokens of values
    0..top (top uniform in 3..15 per sequence) with weights 2^value; label: the running maximum,
    replaced by a uniform random value with probability label_noise (an irreducible loss, so
    that a trained model still gets per-token gradients, as a language model at a plateau)."""
    g = torch.Generator().manual_seed(seed * 1_000_003 + step)
    top = torch.randint(3, VOCAB, (b, 1), generator=g)
    vals = torch.arange(VOCAB).expand(b, VOCAB)
    w = torch.where(vals <= top, 2.0 ** vals.double(), torch.zeros((), dtype=torch.float64))
    toks = torch.multinomial(w, n - 1, replacement=True, generator=g)
    x = torch.cat([torch.full((b, 1), BOS), toks], dim=1)
    y = toks.cummax(dim=1).values
    if label_noise > 0:
        flip = torch.rand(y.shape, generator=g) < label_noise
        y = torch.where(flip, torch.randint(0, VOCAB, y.shape, generator=g), y)
    y = torch.cat([torch.full((b, 1), -100), y], dim=1)
    return x, y


class _SRToBF16(torch.autograd.Function):
    """Stochastic rounding of FP32 values to BF16 (proportional: add 16 random bits below the
    kept ones, truncate; unbiased in magnitude for either sign); the gradient passes unchanged."""

    @staticmethod
    def forward(ctx, x, gen):
        xi = x.contiguous().view(torch.int32)
        r = torch.randint(0, 1 << 16, x.shape, generator=gen, dtype=torch.int32)
        return ((xi + r) & ~0xFFFF).view(torch.float32)

    @staticmethod
    def backward(ctx, g):
        return g, None


class _ToBF16(torch.autograd.Function):
    """Round to BF16 (nearest even) in the forward; pass the gradient through unchanged."""

    @staticmethod
    def forward(ctx, x):
        return x.to(torch.bfloat16).to(x.dtype)

    @staticmethod
    def backward(ctx, g):
        return g


def causal(s):
    """Scores (..., n, n) with the entries above the diagonal (later keys) set to −inf."""
    n = s.shape[-1]
    return s.masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), float("-inf"))


def torch_attention(q, k, v, scale):
    return torch.matmul(torch.softmax(causal(torch.matmul(q, k.transpose(-2, -1)) * scale), dim=-1), v)

class Layer(torch.nn.Module):
    def __init__(self, d_model: int, heads: int, seq: int, plant: float, value_pos: bool):
        super().__init__()
        self.heads, self.d = heads, d_model // heads
        self.ln1 = torch.nn.LayerNorm(d_model)
        self.wq = torch.nn.Linear(d_model, d_model, bias=False)
        self.wk = torch.nn.Linear(d_model, d_model, bias=False)
        self.wv = torch.nn.Linear(d_model, d_model, bias=False)
        self.proj = torch.nn.Linear(d_model, d_model, bias=False)
        self.ln2 = torch.nn.LayerNorm(d_model)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(d_model, 4 * d_model), torch.nn.GELU(),
                                       torch.nn.Linear(4 * d_model, d_model))
        self.vpos = torch.nn.Embedding(seq, d_model) if value_pos else None
        self.plant = plant  # > 0: the first half of each head's V columns are −softplus(·) − plant
        self.attn_cfg = None  # None: torch FP32 attention; else bf16emu.torch.attention's options
        self.bf16_inputs = False
        self.sr_gen = None  # the placebo arm's random bits (seeded per step)
        self.seen = None

    def forward(self, h):
        b, n, c = h.shape
        x = self.ln1(h)
        split = lambda t: t.view(b, n, self.heads, self.d).transpose(1, 2)  # noqa: E731
        q, k = split(self.wq(x)), split(self.wk(x))
        xv = x + self.vpos.weight[:n] if self.vpos is not None else x
        v = split(self.wv(xv))
        if self.plant > 0:  # one-signed columns by construction: negative, at least `plant` from 0
            half = self.d // 2
            v = torch.cat([-torch.nn.functional.softplus(v[..., :half]) - self.plant, v[..., half:]], dim=-1)
        if self.bf16_inputs:
            q, k, v = (_ToBF16.apply(t) for t in (q, k, v))
        scale = float(torch.tensor(self.d ** -0.5, dtype=torch.float32))  # as a kernel gets it: FP32
        if self.attn_cfg is not None:
            cfg = dict(self.attn_cfg)
            sr = cfg.pop("sr_output", False)
            o = et.attention(q, k, v, causal=True, scale=scale, **cfg)
            if sr:
                o = _SRToBF16.apply(o, self.sr_gen)
        else:
            o = torch_attention(q, k, v, scale)
        if torch.is_grad_enabled() and o.requires_grad:
            o.retain_grad()
        self.seen = (x, q, k, v, o, scale)
        h = h + self.proj(o.transpose(1, 2).reshape(b, n, c))
        return h + self.mlp(self.ln2(h))


class Decoder(torch.nn.Module):
    def __init__(self, args):
        super().__init__()
        self.emb = torch.nn.Embedding(VOCAB + 1, args.d_model)
        # layer 0 (the emulated one): no position in q, k; position on the value path
        self.layers = torch.nn.ModuleList([Layer(args.d_model, args.heads, args.seq, args.plant, True),
                                           Layer(args.d_model, args.heads, args.seq, 0.0, True)])
        self.ln = torch.nn.LayerNorm(args.d_model)
        self.head = torch.nn.Linear(args.d_model, VOCAB, bias=False)

    def forward(self, x):
        h = self.emb(x)
        for layer in self.layers:
            h = layer(h)
        return self.head(self.ln(h))


def loss_acc(model, x, y):
    logits = model(x)
    loss = torch.nn.functional.cross_entropy(logits.reshape(-1, VOCAB), y.reshape(-1), ignore_index=-100)
    mask = y >= 0
    return loss, (logits.argmax(-1)[mask] == y[mask]).double().mean().item()


def bf16(t):
    return t.to(torch.bfloat16).to(t.dtype)


def bf16_scores(q, k, scale):
    """The causal scores as paper:autocast forms them: BF16 QKᵀ, then BF16 times the FP32 scale
    (binary64 stands in for the FP32 sums of the BF16 products, exact up to their rounding: a
    regime statistic and the sites' predicted patterns, not a bit-exact claim)."""
    return causal(bf16(bf16(torch.matmul(q.double(), k.double().transpose(-2, -1))) * scale))


def regime(s):
    """The trigger's regime from bf16_scores: per row, m, k = the count of entries equal to m,
    l = Σ exp(S − m) (binary64), r = l − k. Returns per-row k, l, r (B, H, n)."""
    m = s.amax(dim=-1, keepdim=True)
    kk = (s == m).sum(dim=-1).double()
    l = torch.exp(s - m).sum(dim=-1)
    return kk, l, l - kk


def sign_share(v):
    """Per (head, column) of v (B, H, n, d): the share of entries with the column's majority sign."""
    pos = (v > 0).double().mean(dim=(0, 2))
    return torch.maximum(pos, 1 - pos)


def reference(q, k, v, scale):
    """binary64 attention on the given (BF16-valued) q, k, v: O and P."""
    p = torch.softmax(causal(torch.matmul(q.double(), k.double().transpose(-2, -1)) * scale), dim=-1)
    return torch.matmul(p, v.double()), p


def site_predictors(s, v, o_ref):
    """The error each site alone would give (binary64 stand-ins of paper:autocast's one tile),
    from bf16_scores: l site: O_ref · (l / RN16(l) − 1), the BF16-stored row sum; P̄V site:
    (RN16(P̄V) − P̄V) / l, P̄V's BF16 result (P̄ itself rounded to BF16 first, as the einsum's
    operand)."""
    pbar = torch.exp(s - s.amax(dim=-1, keepdim=True))
    l = pbar.sum(dim=-1, keepdim=True)
    u = o_ref * (l / bf16(l) - 1.0)
    pv = torch.matmul(bf16(pbar), v.double())
    w = (bf16(pv) - pv) / l
    return u, w

class Accumulator:
    """The running sum of a per-step matrix G_t: logs ‖G_t‖, ⟨G_t, ΣG_{<t}⟩ (so that ‖ΣG‖ can be
    recomputed exactly from the CSV), the ratio ‖ΣG‖/Σ‖G‖, the top singular value's share of
    ‖ΣG‖²_F and the cosine of G_t with the sum before it."""

    def __init__(self):
        self.sum, self.norms = None, 0.0

    def add(self, g):
        n = g.norm().item()
        if self.sum is None:
            inner, cos = 0.0, None
            self.sum = g.clone()
        else:
            inner = (self.sum * g).sum().item()
            denom = self.sum.norm().item() * n
            cos = inner / denom if denom > 0 else None
            self.sum += g
        self.norms += n
        s = self.sum.norm().item()
        sv = torch.linalg.svdvals(self.sum)
        return {"norm": n, "inner_prev": inner, "cos_prev": cos, "ratio": s / self.norms if self.norms else None,
                "sv_share": (sv[0] ** 2 / (sv ** 2).sum()).item() if s > 0 else None}


def measure(layer, d_model, heads):
    """Per-step quantities of the emulated layer (after loss.backward())."""
    x, q, k, v, o, scale = layer.seen
    do = o.grad.double()
    qd, kd, vd = (t.detach() for t in (q, k, v))
    o_ref, p_ref = reference(qd, kd, vd, scale)
    o_err = o.detach().double() - o_ref
    delta_err = (do * o_err).sum(dim=-1)  # (B, H, n): the paper's δ_lp − δ_hp on the same dO
    out = {"s": delta_err.sum().item(), "delta_err_abs": delta_err.abs().sum().item()}
    for hh in range(heads):
        out[f"s_h{hh}"] = delta_err[:, hh].sum().item()
    # G = −α (P K)ᵀ diag(δ_err) X per head: the δ error's part of dW_Q (rows of head h)
    pk = torch.matmul(p_ref, kd.double())  # (B, H, n, d)
    xd = x.detach().double()  # (B, n, C)
    g = -scale * torch.einsum("bhnd,bhn,bnc->hdc", pk, delta_err, xd).reshape(d_model, d_model)
    # O's error: size, lean away from zero, on the planted (one-signed) columns
    dh = d_model // heads
    planted = slice(0, dh // 2)
    out["O_err_norm"] = o_err.norm().item()
    out["O_rel"] = o_err.norm().item() / max(o_ref.norm().item(), 1e-300)
    out["O_err_mean_planted"] = o_err[..., planted].mean().item()
    out["O_away"] = ((o_err * torch.sign(o_ref)).mean() / o_err.abs().mean()).item() if o_err.abs().sum() > 0 else None
    # the regime
    scores = bf16_scores(qd, kd, scale)
    kk, l, r = regime(scores)
    tied = kk >= 2
    out["rows"] = int(kk.numel())
    out["rows_tied"] = int(tied.sum())
    rt = r[tied]
    out["r_median_tied"] = rt.median().item() if rt.numel() else None
    out["r_below_003_tied"] = (rt < 0.03).double().mean().item() if rt.numel() else None
    out["r_below_01_tied"] = (rt < 0.1).double().mean().item() if rt.numel() else None
    out["k_mean_tied"] = kk[tied].mean().item() if rt.numel() else None
    # V's sign shares: per (head, column), the share of entries with the majority sign
    share = sign_share(vd)  # (H, d)
    out["v_sign_share_planted"] = share[:, planted].mean().item()
    out["v_sign_share_other"] = share[:, dh // 2:].mean().item()
    # the two sites' signatures: fit O_err ≈ a·u + b·w over every element, tied rows and the rest
    u, w = site_predictors(scores, vd, o_ref)
    for tag, sel in (("tied", tied), ("untied", ~tied)):
        sel = sel.unsqueeze(-1).expand_as(o_err)
        e, uu, ww = o_err[sel], u[sel], w[sel]
        out.update({f"sig_{tag}_{name}": val.item() for name, val in (
            ("uu", (uu * uu).sum()), ("uw", (uu * ww).sum()), ("ww", (ww * ww).sum()), ("eu", (e * uu).sum()),
            ("ew", (e * ww).sum()), ("ee", (e * e).sum()))})
        out[f"sig_{tag}_count"] = int(sel.sum())
    return out, g


def spectral_heads(w, heads):
    dh = w.shape[0] // heads
    return [torch.linalg.matrix_norm(w[h * dh:(h + 1) * dh].double(), ord=2).item() for h in range(heads)]


def pretrain(args, log):
    """Plain FP32 PyTorch until the loss plateaus; returns the model's state dict and a log."""
    torch.manual_seed(args.seed)
    model = Decoder(args)
    opt = torch.optim.AdamW(model.parameters(), lr=args.pre_lr, betas=(0.9, 0.95), weight_decay=0.0)
    hist = []
    t0 = time.time()
    for step in range(args.pre_steps):
        x, y = batch(10_000_000 + step, args.seed, args.batch, args.seq, args.label_noise)  # batches disjoint from fine-tuning's
        loss, acc = loss_acc(model, x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        hist.append({"step": step, "loss": loss.item(), "acc": acc})
        if step % args.log_every == 0 or step == args.pre_steps - 1:
            log(f"pretrain: step {step + 1}/{args.pre_steps} loss {loss.item():.5f} acc {acc:.4f} "
                f"({time.time() - t0:.0f} s)")
    return model.state_dict(), hist


def gate(args, state):
    """The regime of layer 0 at the checkpoint, on 8 fine-tuning batches, with BF16 q, k, v."""
    model = Decoder(args)
    model.load_state_dict(state)
    model.layers[0].bf16_inputs = True
    rs, tied, rows, shares, ks = [], 0, 0, [], []
    with torch.no_grad():
        for step in range(8):
            x, _ = batch(step, args.seed, args.batch, args.seq)
            model(x)
            _, q, k, v, _, scale = model.layers[0].seen
            kk, _, r = regime(bf16_scores(q, k, scale))
            t = kk >= 2
            rs.append(r[t])
            ks.append(kk[t])
            tied += int(t.sum())
            rows += kk.numel()
            shares.append(sign_share(v)[:, : args.d_model // args.heads // 2].mean().item())
    r = torch.cat(rs)
    return {"rows": rows, "rows_tied": tied, "tied_share": tied / rows,
            "r_median": r.median().item() if r.numel() else None,
            "r_p90": r.quantile(0.9).item() if r.numel() else None,
            "r_below_003": (r < 0.03).double().mean().item() if r.numel() else None,
            "k_median": torch.cat(ks).median().item() if r.numel() else None,
            "v_sign_share_planted": sum(shares) / len(shares),
            "passes": bool(r.numel() and r.median().item() < args.gate_r and sum(shares) / len(shares) >= 0.95)}


def run_arm(name, cfg, args, state, log):
    model = Decoder(args)
    model.load_state_dict(state)
    l0 = model.layers[0]
    l0.bf16_inputs = True  # every arm's layer-0 attention inputs are BF16 (layer 1 stays FP32)
    l0.attn_cfg = dict(cfg, threads=args.threads)
    if cfg["policy"].startswith("paper"):
        l0.attn_cfg["backward"] = args.backward
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.95), weight_decay=0.0)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / args.warmup))
    acc_g = Accumulator()
    rows, t_start = [], time.time()
    for step in range(args.steps):
        t0 = time.time()
        x, y = batch(step, args.seed, args.batch, args.seq, args.label_noise)
        l0.sr_gen = torch.Generator().manual_seed(args.seed * 7_000_003 + step)
        opt.zero_grad(set_to_none=True)
        loss, acc = loss_acc(model, x, y)
        loss.backward()
        t_arm = time.time() - t0
        m, g = measure(l0, args.d_model, args.heads)
        row = {"step": step, "loss": loss.item(), "acc": acc}
        row.update(m)
        row.update({f"G.{k}": v for k, v in acc_g.add(g).items()})
        gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0).item()
        row["grad_norm"] = gn
        row["W_Q_norm"] = torch.linalg.matrix_norm(l0.wq.weight.double(), ord=2).item()
        for hh, val in enumerate(spectral_heads(l0.wq.weight.detach(), args.heads)):
            row[f"W_Q_norm_h{hh}"] = val
        opt.step()
        sched.step()
        row["seconds"] = time.time() - t0
        row["seconds_arm"] = t_arm
        rows.append(row)
        if not math.isfinite(loss.item()):
            log(f"{name}: step {step}: loss is not finite; stopping the arm")
            break
        if step % args.log_every == 0 or step == args.steps - 1:
            log(f"{name}: step {step + 1}/{args.steps} loss {loss.item():.5f} s_t {row['s']:+.3e} "
                f"ratio(G) {row['G.ratio']:.3f} |W_Q|2 {row['W_Q_norm']:.4f} tied {row['rows_tied']}/{row['rows']} "
                f"r_med {row['r_median_tied'] if row['r_median_tied'] is not None else float('nan'):.3g} "
                f"{row['seconds']:.2f} s/step ({time.time() - t_start:.0f} s)")
    return rows


def model_cfg(name, args):
    cfg = dict(ARMS[name])
    if cfg["policy"].startswith("paper"):
        cfg["backward"] = args.backward
    return cfg


def write_csv(path, rows):
    keys = list(rows[0].keys())
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        for r in rows:
            w.writerow({k: ("" if r.get(k) is None else (repr(r[k]) if isinstance(r[k], float) else r[k]))
                        for k in keys})


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("--steps", type=int, default=2000, help="fine-tuning steps per arm (default 2000)")
    ap.add_argument("--pre-steps", type=int, default=3000, help="FP32 pre-training steps (default 3000)")
    ap.add_argument("--arms", default=",".join(ARMS), help="comma-separated: " + ", ".join(ARMS))
    ap.add_argument("--d-model", type=int, default=64)
    ap.add_argument("--heads", type=int, default=2)
    ap.add_argument("--seq", type=int, default=64)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--pre-lr", type=float, default=3e-3)
    ap.add_argument("--lr", type=float, default=3e-4)
    ap.add_argument("--warmup", type=int, default=50)
    ap.add_argument("--plant", type=float, default=0.5,
                    help="half of each head's V columns are −softplus(·) − PLANT (default 0.5; 0: no planted columns)")
    ap.add_argument("--label-noise", type=float, default=0.1,
                    help="share of labels replaced by a random value (default 0.1)")
    ap.add_argument("--gate-r", type=float, default=0.03, help="the gate: median r of tied rows below this")
    ap.add_argument("--backward", choices=("reference", "authors"), default="reference",
                    help="the paper arms' backward (default reference; the fp32 arms keep reference)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=1, help="bf16emu worker threads (default 1)")
    ap.add_argument("--log-every", type=int, default=50)
    ap.add_argument("--out", default="decisive-out")
    ap.add_argument("--quick", action="store_true", help="a smoke test: a tiny pre-training, 40 steps per arm (~20 s)")
    ap.add_argument("--pretrain-only", action="store_true", help="stop after the checkpoint and the gate")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    if args.quick:
        args.steps, args.pre_steps, args.d_model, args.heads, args.seq, args.batch = 40, 20, 32, 2, 16, 2
        args.log_every = 10
    arms = [a for a in args.arms.split(",") if a]
    for a in arms:
        if a not in ARMS:
            ap.error(f"unknown arm '{a[:80]}' ({', '.join(ARMS)})")
    if args.d_model % args.heads or (args.d_model // args.heads) % 2 or args.steps < 1 or args.pre_steps < 1:
        ap.error("--d-model must be a multiple of --heads with an even head size; --steps, --pre-steps >= 1")
    if args.threads < 0 or args.seq < 2 or args.batch < 1 or args.warmup < 1 or not 0 <= args.label_noise < 1:
        ap.error("--threads >= 0, --seq >= 2, --batch >= 1, --warmup >= 1, 0 <= --label-noise < 1")

    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    os.makedirs(args.out, exist_ok=True)
    ckpt = os.path.join(args.out, "checkpoint.pt")
    if os.path.exists(ckpt) and not args.quick:
        state = torch.load(ckpt)
        log(f"checkpoint {ckpt} reused")
    else:
        state, hist = pretrain(args, log)
        if not args.quick:
            torch.save(state, ckpt)
        write_csv(os.path.join(args.out, "pretrain.csv"), hist)
    g = gate(args, state)
    with open(os.path.join(args.out, "gate.json"), "w") as f:
        json.dump({"gate": g, "config": vars(args)}, f, indent=1, sort_keys=True)
    log(f"gate: {json.dumps(g)}")
    if args.pretrain_only:
        return 0
    if not g["passes"] and not args.quick:
        log("the gate is not met: the arms run anyway, and the doc states the gate's numbers")
    set_dir = os.path.join(args.out, args.backward)  # the arms' files: one folder per set
    os.makedirs(set_dir, exist_ok=True)
    for name in arms:
        rows = run_arm(name, ARMS[name], args, state, log)
        write_csv(os.path.join(set_dir, f"{name}.csv"), rows)
        meta = {"arm": name, "attention": model_cfg(name, args), "config": vars(args), "steps_run": len(rows),
                "mean_seconds_per_step": sum(r["seconds"] for r in rows) / len(rows)}
        with open(os.path.join(set_dir, f"{name}.json"), "w") as f:
            json.dump(meta, f, indent=1, sort_keys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
