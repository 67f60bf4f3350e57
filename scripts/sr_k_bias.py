#!/usr/bin/env python3
"""Mean error of k-bit stochastic rounding against exact stochastic rounding (docs/rounding.md).

Inputs: all 2^16 fp32 numbers in [1, 2) whose bf16 rounding discards a distinct 16-bit pattern
(x = 1 + j * 2^-23, j = 0 .. 2^16 - 1, so the discarded fraction f = j / 2^16 is uniform on the
16-bit grid). Each is rounded into bf16 under `sr_k:K` (K = 1..16) and under `stochastic` (32 random
bits: exact for 16 discarded bits) with SEEDS seeds, i.e. 2^16 * SEEDS draws per row. The table
gives the mean of (result - x) in bf16 ulps (2^-7 in [1, 2)), the standard error of that mean, and
the expected value -(2^-K - 2^-16) / 2 (0 for exact SR).

Usage: PYTHONPATH=build/python python3 scripts/sr_k_bias.py [--seeds 1024] > docs/data/sr_k_bias.txt (about 1 minute)
"""
import argparse
import sys

import numpy as np

import bf16emu


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=1024, help="seeds per row (default 1024)")
    args = ap.parse_args()
    j = np.arange(1 << 16, dtype=np.uint32)
    x_bits = (np.uint32(0x3F800000) + j).astype(np.uint32)
    x = x_bits.view(np.float32).astype(np.float64)
    ulp = 2.0 ** -7
    rows = [(k, f"sr_k:{k}", -(2.0 ** -k - 2.0 ** -16) / 2) for k in range(1, 17)]
    rows.append((32, "stochastic", 0.0))
    print(f"# k-bit stochastic rounding, fp32 -> bf16, 2^16 inputs x {args.seeds} seeds per row")
    print(f"# bf16emu {bf16emu.__version__}; scripts/sr_k_bias.py --seeds {args.seeds}")
    print(f"{'K':>3} {'mode':>12} {'mean err (ulp)':>16} {'std err':>10} {'expected':>12} {'P(up) mean':>11}")
    for k, mode, expected in rows:
        errs = []
        ups = 0
        for s in range(args.seeds):
            r = bf16emu.convert(x_bits.view(np.float32), to="bf16", rounding=mode, seed=s)
            y = (np.asarray(r).astype(np.uint32) << 16).view(np.float32).astype(np.float64)
            errs.append((y - x) / ulp)
            ups += int(np.count_nonzero(y > x))
        e = np.concatenate(errs)
        label = "exact SR" if mode == "stochastic" else mode
        print(f"{k:>3} {label:>12} {e.mean():>16.3e} {e.std(ddof=1) / np.sqrt(e.size):>10.1e} "
              f"{expected:>12.3e} {ups / e.size:>11.5f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
