#!/usr/bin/env python3
"""Write the compact regression files of tests/gpu_data/published from a checkout of
north-numerical-computing/MATLAB-tensor-core (its model_validation/ folder).

    python3 convert.py UPSTREAM_REPO_DIR OUT_DIR [--count N]

UPSTREAM_REPO_DIR is a git work tree or bare repository; the files are read with `git show`
from the commits named below, so the result does not depend on what is checked out. --count
keeps the first N vectors of every set (default 1000; 5000 gives every published vector).
Needs python3 and numpy (for the fp16 conversion of the fp16 operands). See README.md."""
import argparse
import os
import struct
import subprocess
import sys

import numpy as np

COMMIT = 'b12b5a700957655375a1b0c1d0c26e76065da015'  # the snapshot the committed files come from
OLD = '109e412'  # v0.1: H100/H200 fp8 f32 outputs of the published mma.sync program, C included

# (GPU, upstream format folder, D format, model arch, instruction, C use, commit)
SETS = []
for gpu, arch in [('V100', 'sm70')]:
    SETS += [(gpu, 'fp16', o, arch, 'mma', 'c', COMMIT) for o in ('fp16', 'fp32')]
for gpu, arch in [('A100', 'sm80'), ('A2', 'sm86'), ('Ada', 'sm89'), ('L40S', 'sm89'), ('H100', 'sm90'),
                  ('H200', 'sm90'), ('B200', 'sm100')]:
    SETS += [(gpu, 'bf16', 'fp32', arch, 'mma', 'c', COMMIT), (gpu, 'fp16', 'fp16', arch, 'mma', 'c', COMMIT),
             (gpu, 'fp16', 'fp32', arch, 'mma', 'c', COMMIT), (gpu, 'tf32', 'fp32', arch, 'mma', 'c', COMMIT)]
    if gpu in ('A100', 'A2'):
        continue
    for f in ('E4M3', 'E5M2'):
        if gpu in ('H100', 'H200'):
            # current f32 files: a wgmma run with a zero accumulator (upstream commit 0ed9a9e)
            SETS.append((gpu, f, 'fp32', arch, 'wgmma', 'zero', COMMIT))
            SETS.append((gpu, f, 'fp32', arch, 'mma', 'c', OLD))
        else:
            SETS.append((gpu, f, 'fp32', arch, 'mma', 'c', COMMIT))
        if gpu != 'L40S':
            SETS.append((gpu, f, 'fp16', arch, 'mma', 'c', COMMIT))

FMT = {'bf16': ('bf16', 4), 'fp16': ('fp16', 4), 'tf32': ('tf32', 5), 'E4M3': ('e4m3', 2), 'E5M2': ('e5m2', 2)}


def show(repo, commit, path):
    return subprocess.run(['git', '-C', repo, 'show', f'{commit}:{path}'], check=True, capture_output=True,
                          text=True).stdout.splitlines()


def fp8_table(ebits, mbits, nan_codes):
    bias = (1 << (ebits - 1)) - 1
    t = {}
    for code in range(256):
        if code in nan_codes:
            continue
        s, e, m = code >> 7, (code >> mbits) & ((1 << ebits) - 1), code & ((1 << mbits) - 1)
        if ebits == 5 and e == 31:
            continue  # e5m2 Inf and NaN
        v = (m / (1 << mbits)) * 2.0 ** (1 - bias) if e == 0 else (1 + m / (1 << mbits)) * 2.0 ** (e - bias)
        t[struct.unpack('<I', struct.pack('<f', -v if s else v))[0]] = code
    return t


E4M3 = fp8_table(4, 3, {0x7f, 0xff})
E5M2 = fp8_table(5, 2, set())


def encode(fmt, bits):
    """The operand as the GPU received it, in its format's bits; it must be exact."""
    if fmt == 'bf16':
        assert bits & 0xffff == 0, hex(bits)
        return bits >> 16
    if fmt == 'tf32':
        assert bits & 0x1fff == 0, hex(bits)
        return bits >> 13
    if fmt == 'fp16':
        h = np.array([bits], dtype=np.uint32).view(np.float32).astype(np.float16)
        assert int(h.astype(np.float32).view(np.uint32)[0]) == bits, hex(bits)
        return int(h.view(np.uint16)[0])
    return (E4M3 if fmt == 'e4m3' else E5M2)[bits]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('repo')
    ap.add_argument('out')
    ap.add_argument('--count', type=int, default=1000)
    o = ap.parse_args()
    os.makedirs(os.path.join(o.out, 'inputs'), exist_ok=True)
    written = {}
    for gpu, folder, dfmt, arch, instr, cuse, commit in SETS:
        base = f'model_validation/{gpu}/{folder}/'
        a = show(o.repo, COMMIT, base + f'a_{gpu}_{folder}.txt')
        b = show(o.repo, COMMIT, base + f'b_{gpu}_{folder}.txt')
        c = show(o.repo, commit, base + f'c_{gpu}_fp32.txt')
        d = show(o.repo, commit, base + f'd_{gpu}_{dfmt}.txt')
        n = min(o.count, len(a))
        fmt, width = FMT[folder]
        K = len(a[0].split())
        name = f'{fmt}_k{K}'
        if name in written:  # every GPU folder of this format holds the same a and b files
            assert written[name] == (a[:n], b[:n]), f'{base}: a or b differ from the other GPUs'
        else:
            with open(os.path.join(o.out, 'inputs', name + '.txt'), 'w') as f:
                f.write(f'# {fmt} operands, K = {K}: per line A then B, each K values of {width} hex digits\n')
                f.write(f'# from {base}a_{gpu}_{folder}.txt and b_{gpu}_{folder}.txt (the same files in every '
                        f'GPU folder that uses them), commit {COMMIT}, vectors 1-{n}\n')
                for i in range(n):
                    va = [encode(fmt, int(x, 16)) for x in a[i].split()]
                    vb = [encode(fmt, int(x, 16)) for x in b[i].split()]
                    f.write(''.join(f'{v:0{width}x}' for v in va) + ' ' + ''.join(f'{v:0{width}x}' for v in vb) + '\n')
            written[name] = (a[:n], b[:n])
        tag = '' if commit == COMMIT else '_v01'
        out = os.path.join(o.out, f'{gpu}_{fmt}_{dfmt}{"_" + instr if instr != "mma" else ""}{tag}.txt')
        with open(out, 'w') as f:
            f.write(f'# {gpu} {folder} -> {dfmt}: {base}c_{gpu}_fp32.txt and d_{gpu}_{dfmt}.txt at commit {commit}, '
                    f'vectors 1-{n} of {len(d)}\n')
            f.write(f'#! inputs={name} arch={arch} instr={instr} in={fmt} out={dfmt} c={cuse}\n')
            for i in range(n):
                dv = int(d[i].strip(), 2)
                if dfmt == 'fp16':  # the file holds the f16 D widened to f32 (__half2float)
                    h = np.array([dv], dtype=np.uint32).view(np.float32).astype(np.float16)
                    assert int(h.astype(np.float32).view(np.uint32)[0]) == dv
                    ds = f'{int(h.view(np.uint16)[0]):04x}'
                else:
                    ds = f'{dv:08x}'
                f.write(f'{int(c[i].strip(), 2):08x} {ds}\n')
    print(f'{len(SETS)} sets, {len(written)} input files, {o.count} vectors each', file=sys.stderr)


if __name__ == '__main__':
    main()
