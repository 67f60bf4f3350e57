#!/usr/bin/env python3
"""Compact the real-CPU BF16 recordings (the format of their README, kept here as
README.md "Original format") into the files of this folder, losslessly:

    python3 convert.py SRC_DIR OUT_DIR        # SRC_DIR holds vdpbf16ps.txt, vcvtneps2bf16.txt

Each recording has three blocks, one per MXCSR value (0x1f80, 0x7f80, 0x9fc0), with the same
inputs in the same order. The compact line holds the inputs once and the three results in that
MXCSR order, a result equal to the one before it written "="; hex without "0x". The script
checks that the blocks' inputs agree and that expanding the compact lines gives the original
lines back, byte for byte."""
import os
import sys

MXCSR = ['0x1f80', '0x7f80', '0x9fc0']


def compact(src, dst, n_in):
    lines = open(src).read().splitlines()
    assert len(lines) % 3 == 0
    n = len(lines) // 3
    blocks = [lines[i * n:(i + 1) * n] for i in range(3)]
    out = []
    for i in range(n):
        rows = [blocks[j][i].split() for j in range(3)]
        for j in range(3):
            assert len(rows[j]) == n_in + 2 and rows[j][n_in] == MXCSR[j], (src, j, i)
            assert rows[j][:n_in] == rows[0][:n_in], (src, i)
        ins = [x[2:] for x in rows[0][:n_in]]
        res = [rows[j][n_in + 1][2:] for j in range(3)]
        out.append(' '.join(ins + [res[0]] + ['=' if res[j] == res[j - 1] else res[j] for j in (1, 2)]))
    # the round trip
    back = []
    for j in range(3):
        for line in out:
            f = line.split()
            res = f[n_in:]
            for k in (1, 2):
                if res[k] == '=':
                    res[k] = res[k - 1]
            back.append(' '.join(['0x' + x for x in f[:n_in]] + [MXCSR[j], '0x' + res[j]]))
    assert back == lines, src
    with open(dst, 'w') as f:
        f.write('\n'.join(out) + '\n')
    return n


def main():
    src, dst = sys.argv[1], sys.argv[2]
    n1 = compact(os.path.join(src, 'vdpbf16ps.txt'), os.path.join(dst, 'vdpbf16ps.txt'), 5)
    n2 = compact(os.path.join(src, 'vcvtneps2bf16.txt'), os.path.join(dst, 'vcvtneps2bf16.txt'), 1)
    print(f'vdpbf16ps: {n1} inputs x 3 MXCSR; vcvtneps2bf16: {n2} x 3; round trip exact', file=sys.stderr)


if __name__ == '__main__':
    main()
