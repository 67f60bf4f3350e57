"""Cross-check a PyTorch attention against bf16emu, end to end.

1. Run an attention in PyTorch on the CPU in bfloat16 (Q K^T, softmax, P V; the way a
   reference implementation without a fused kernel computes it).
2. Emulate it with the bf16emu policy that follows the same rounding points: 'paper' (every
   matmul is an FP32 dot product rounded to BF16, the softmax state kept in BF16), variant
   'standard' (S and P materialised, no tiling).
3. compare() the two outputs bit for bit: mismatches, ulp histogram, worst element.
4. Print the ledger: where the emulated run rounded, how often, with which bias.

Run:  PYTHONPATH=build/python /usr/bin/python3 examples/python/crosscheck_attention.py
"""
import argparse
import math

import torch

import bf16emu


def torch_attention(q, k, v):
    """PyTorch CPU attention in bfloat16, without a fused kernel (PyTorch 1.13 has none)."""
    s = torch.matmul(q, k.transpose(-2, -1)) * (1.0 / math.sqrt(q.shape[-1]))
    p = torch.softmax(s, dim=-1)
    return torch.matmul(p, v)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--dim", type=int, default=64)
    ap.add_argument("--policy", default="paper", help="bf16emu policy (paper, fa2:sm80, fa2:sm90, ...)")
    ap.add_argument("--variant", default="standard", help="standard, fa2 or stabilized")
    args = ap.parse_args()

    torch.manual_seed(0)
    shape = (args.batch, args.heads, args.seq, args.dim)  # PyTorch's (batch, heads, seq, dim)
    q, k, v = (torch.randn(shape).to(torch.bfloat16) for _ in range(3))

    o_torch = torch_attention(q, k, v)
    run = bf16emu.attention(q, k, v, policy=args.policy, variant=args.variant)
    o_emul = torch.from_numpy(run["o"]).to(torch.bfloat16)  # exact: O holds bf16 values

    cmp = bf16emu.compare(o_torch, o_emul)
    print(f"policy {run['policy']}, variant {run['variant']}, shape {shape}")
    print(f"elements {cmp.count}, bitwise mismatches {cmp.mismatches}")
    hist = cmp.ulp_histogram  # buckets 0, 1, 2, 4, 8, ...: key k counts distances in (k/2, k] ulps
    print("ulp histogram:", {k: hist[k] for k in sorted(hist, key=lambda k: (isinstance(k, str), k))})
    if cmp.worst:
        w = cmp.worst
        print(f"worst element {w['index']}: torch {w['actual']!r} vs bf16emu {w['expected']!r} ({w['ulps']} ulps)")
        print("first mismatches:", cmp.first_mismatches[:5])
        print("explain first:", cmp.explain(cmp.first_mismatches[0]))
    err = run["output_error"]
    print(f"bf16emu vs exact attention: mean signed error {err['mean_signed']:.3e} (z {err['z']:.2f}), "
          f"max |error| {err['max_abs']:.3e}")
    print("ledger (site: roundings, mean signed error, ties):")
    for site, s in run["ledger"]["sites"].items():
        print(f"  {site:12s} {s['count']:10d}  {s['mean']:+.3e}  {s['ties']}")


if __name__ == "__main__":
    main()
