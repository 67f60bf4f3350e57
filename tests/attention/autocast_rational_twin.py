#!/usr/bin/env python3
"""An independent model of paper:autocast in exact rational arithmetic, compared bit for bit.

The authors' attention.py (ucker/why-low-precision-training-fails) under torch autocast(bf16),
written here from the site-by-site description in docs/attention.md ("paper:autocast"), not from
the C++: every FP32 or BF16 rounding is round-to-nearest-even of the exact rational result
(fractions.Fraction); an elementwise op with a BF16 result rounds to FP32 first (opmath), then
to BF16; exp is binary64 math.exp rounded once to FP32. It runs
`bf16emu attention --policy paper:autocast --out-o` on random BF16 inputs with repeated keys (ties),
small tiles (several key tiles per row, fully masked ones under --causal), with and without
--causal and --variant stabilized (beta 2, and beta 8, where the 1e-10 clamp of the row sum
fires), and requires every output element to be equal.

usage: autocast_rational_twin.py BF16EMU WORKDIR [SEED]
"""
import math
import os
import random
import struct
import subprocess
import sys
from fractions import Fraction as F


def rn(x, p):
    """Round-to-nearest-even of the rational x to p significant bits (normal range of FP32/BF16,
    subnormals with the FP32/BF16 minimum exponent -126)."""
    if x == 0:
        return F(0)
    a = abs(x)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    while F(2) ** e > a:
        e -= 1
    while F(2) ** (e + 1) <= a:
        e += 1
    q = F(2) ** (max(e, -126) - (p - 1))
    r = round(a / q) * q  # round() of a Fraction: half to even
    return r if x > 0 else -r


def r32(x):
    return rn(F(x), 24)


def r16(x):
    return rn(F(x), 8)


MAX_NEG = -F(255) * F(2) ** 120  # -torch.finfo(torch.bfloat16).max


CLAMPED = [0]  # (row, key tile) pairs whose tile row sum the clamp raised to RN32(1e-10)


def forward(Q, K, V, n, d, bm, bn, causal, stabilized, beta=2):
    scale = r32(F(d ** -0.5))  # a Python float, FP32 in the kernel's opmath
    tol, eps = r32(F(1e-3)), r32(F(1e-10))
    O = [None] * n
    for i0 in range(0, n, bm):
        rows = range(i0, min(n, i0 + bm))
        m = {r: MAX_NEG for r in rows}
        l = {r: F(0) for r in rows}
        o = {r: [F(0)] * d for r in rows}
        for j0 in range(0, n, bn):  # every key tile, forward order
            keys = range(j0, min(n, j0 + bn))
            for r in rows:
                S = []
                for j in keys:
                    if causal and j > r:
                        S.append(MAX_NEG)
                        continue
                    acc = F(0)
                    for t in range(d):
                        acc = r32(Q[r][t] * K[j][t] + acc)
                    S.append(r16(r32(r16(acc) * scale)))
                rm = max(S)
                if stabilized:
                    thr = r16(r32(rm - tol))
                    ties = sum(1 for s in S if s >= thr)
                    if ties > 1 and rm > 0:
                        rm = r16(r32(beta * rm))
                    elif ties > 1 and rm < 0:
                        rm = F(0)
                m_new = max(rm, m[r])
                P = [r32(F(math.exp(float(r16(r32(s - m_new)))))) for s in S]
                block_sum = F(0)
                for p in P:
                    block_sum = r32(block_sum + p)
                if block_sum < eps:
                    CLAMPED[0] += 1
                block_sum = max(block_sum, eps)
                Pbar = [r16(p) for p in P]
                pv = []
                for i in range(d):
                    acc = F(0)
                    for jj, j in enumerate(keys):
                        acc = r32(Pbar[jj] * V[j][i] + acc)
                    pv.append(r16(acc))
                alpha = r32(F(math.exp(float(r16(r32(m[r] - m_new))))))
                l[r] = r16(r32(r32(alpha * l[r]) + block_sum))
                o[r] = [r16(r32(r16(r32(o[r][i] * alpha)) + pv[i])) for i in range(d)]
                m[r] = m_new
        for r in rows:
            O[r] = [r16(r32(o[r][i] / l[r])) for i in range(d)]
    return O


def npy_write(path, values, shape):
    hdr = "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }" % ", ".join(map(str, shape))
    hdr += " " * ((64 - (10 + len(hdr) + 1) % 64) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr.encode())
        f.write(struct.pack("<%df" % len(values), *[float(v) for v in values]))


def npy_read_f32(path):
    b = open(path, "rb").read()
    start = 10 + struct.unpack("<H", b[8:10])[0]
    data = b[start:]
    return [F(v) for v in struct.unpack("<%df" % (len(data) // 4), data)]


def main():
    cli, work = sys.argv[1], sys.argv[2]
    seed = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    os.makedirs(work, exist_ok=True)
    random.seed(seed)
    n, d, bm, bn = 40, 8, 16, 16

    def bf16_value():
        return r16(F(random.gauss(0, 1.5)))

    Q = [[bf16_value() for _ in range(d)] for _ in range(n)]
    K = [[bf16_value() for _ in range(d)] for _ in range(n)]
    # Row 0 aims at the repeated key: Q[0] = K[3], then K[3] doubled (exact in BF16), so its
    # tied maximum (2 |K[3]|^2 / sqrt(8) = 9.1 at seed 1) is its largest score in key tile 0
    # by far, and beta 8 puts every P of that tile row at or below exp(-7 * 9.1).
    Q[0] = list(K[3])
    K[3] = [2 * x for x in K[3]]
    for j in range(5, 12):  # a repeated key: tied maxima
        K[j] = list(K[3])
    V = [[bf16_value() for _ in range(d)] for _ in range(n)]
    paths = {}
    for name, M in (("q", Q), ("k", K), ("v", V)):
        paths[name] = os.path.join(work, "twin_%s.npy" % name)
        npy_write(paths[name], [x for row in M for x in row], (n, d))
    out = os.path.join(work, "twin_o.npy")
    failed = 0
    # beta 8 (the top of the paper's range): (beta - 1) * r_m > ln(1e10) = 23.0 for a tied maximum
    # r_m above 3.3, so every P-bar of such a tile row is below 1e-10 / 16 and the clamp
    # .clamp(min=EPSILON) of attention.py line 98 sets the tile's row sum (required to happen).
    for causal in (False, True):
        for stabilized, beta in ((False, 2), (True, 2), (True, 8)):
            args = [cli, "attention", "--policy", "paper:autocast", "--q", paths["q"], "--k", paths["k"],
                    "--v", paths["v"], "--out-o", out, "--block-m", str(bm), "--block-n", str(bn), "--no-ledger"]
            if causal:
                args.append("--causal")
            if stabilized:
                args += ["--variant", "stabilized", "--beta", str(beta)]
            subprocess.run(args, check=True, stdout=subprocess.DEVNULL)
            got = npy_read_f32(out)
            CLAMPED[0] = 0
            want = forward(Q, K, V, n, d, bm, bn, causal, stabilized, beta)
            differ = [(r, i) for r in range(n) for i in range(d) if got[r * d + i] != want[r][i]]
            if beta == 8 and not causal and CLAMPED[0] == 0:  # causal: masked tiles clamp anyway
                print("beta 8: the clamp never fired; the case does not test it")
                failed += 1
            print("causal=%d stabilized=%d beta %g: %d of %d elements differ, %d tile rows clamped%s" % (
                causal, stabilized, beta, len(differ), n * d, CLAMPED[0],
                "" if not differ else " (first O[%d,%d]: %s vs %s)" % (
                    differ[0] + (float(got[differ[0][0] * d + differ[0][1]]), float(want[differ[0][0]][differ[0][1]])))))
            failed += len(differ)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
