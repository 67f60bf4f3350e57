"""Draw the pictures of docs/python.md ("Pictures") into docs/img/python/ with bf16emu.plot.

1. comparison.png: a GEMM D = A B (64 x 256 x 64, bf16 in, D in fp32) computed on the
   sm90 tensor-core model against the same GEMM in plain binary32 fma; Comparison.plot() shows
   the ulp histogram and where the differing elements lie.
2. ledger.png: the error ledger of an attention under paper:autocast (1 x 2 x 64 x 32, causal).
3. format_e4m3.png, format_bf16.png: the value grid of e4m3 (every value) and of bf16 (three
   binades, every 8th value), each with its spacing over the whole range.
4. block.png: the first hardware block of D[0, 0] of one sm90 mma.sync (bf16), with products
   spread over 30 binades, so the low bits of the small ones fall below the alignment window.

Needs numpy and matplotlib (python3-matplotlib). Inputs are seeded: the pictures are the same
on every run.

Run:  PYTHONPATH=build/python /usr/bin/python3 examples/python/make_plots.py [--out docs/img/python]
"""
import argparse
from pathlib import Path

import numpy as np

import bf16emu


def main():
    root = Path(__file__).resolve().parents[2]
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=root / "docs" / "img" / "python")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(2024)

    # 1. A kernel cross-check: tensor-core GEMM vs binary32 fma, D in fp32.
    a = bf16emu.convert(rng.standard_normal((64, 256)).astype(np.float32), to="bf16")
    b = bf16emu.convert(rng.standard_normal((256, 64)).astype(np.float32), to="bf16")
    tc = bf16emu.gemm(a, b, a_format="bf16", arch="sm90")
    fma = bf16emu.gemm(a, b, a_format="bf16", arch="ieee-fma")
    c = bf16emu.compare(tc, fma)
    c.plot(args.out / "comparison.png",
           title="sm90 tensor-core GEMM vs binary32 fma (64 x 256 x 64, bf16 in, fp32 out)")
    print(f"comparison.png: {c.mismatches} of {c.count} differ, histogram {c.ulp_histogram}")

    # 2. The ledger of an attention.
    q, k, v = (rng.standard_normal((1, 2, 64, 32)) for _ in range(3))
    r = bf16emu.attention(q, k, v, policy="paper:autocast", causal=True)
    bf16emu.plot.ledger(r, args.out / "ledger.png",
                        title="attention error ledger, paper:autocast (1 x 2 x 64 x 32, causal), per rounding site")
    print(f"ledger.png: {sum(1 for s in r['ledger']['sites'].values() if s['count'])} sites")

    # 3. Two value grids.
    for fmt in ("e4m3", "bf16"):
        bf16emu.plot.format(fmt, args.out / f"format_{fmt}.png")
        print(f"format_{fmt}.png")

    # 4. One tensor-core block: column k of A scaled by 2^-2k, so the products spread over 30
    #    binades and the small ones lose low bits to the alignment.
    scale = np.exp2(-2.0 * rng.permutation(16)).astype(np.float32)
    a = bf16emu.convert(rng.standard_normal((16, 16)).astype(np.float32) * scale, to="bf16")
    b = bf16emu.convert(rng.standard_normal((16, 8)).astype(np.float32), to="bf16")
    d, tr = bf16emu.mma(a, b, a_format="bf16", arch="sm90", trace=(0, 0))
    bf16emu.plot.block(tr, args.out / "block.png")
    print(f"block.png: {tr['ptx']}, F = {tr['alignment_bits']}")

    for p in sorted(args.out.glob("*.png")):
        print(f"  {p.name}: {p.stat().st_size} bytes")


if __name__ == "__main__":
    main()
