"""CTest explain_gemm_cli: `bf16emu explain-gemm` names members of the GEMM family built here
without the family code, and explains a 1-ulp perturbation with its block trace.

Usage: explain_gemm_cli.py path/to/bf16emu. Exits 77 when NumPy is missing."""

import json
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
except ImportError:
    print("explain_gemm_cli: skipped: NumPy is missing (apt-get install python3-numpy)")
    sys.exit(77)

CLI = sys.argv[1]
M, N, K, SLICE = 6, 5, 40, 20


def rne_bf16(x32):
    u = np.asarray(x32, np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def bf16_value(bits):
    return (np.asarray(bits, np.uint16).astype(np.uint32) << 16).view(np.float32)


def run(*args, check=True):
    p = subprocess.run([CLI, "explain-gemm", *args], capture_output=True, text=True)
    if check and p.returncode != 0:
        sys.exit(f"explain-gemm {' '.join(args)}: exit {p.returncode}: {p.stderr}")
    return p


def full_matches(args):
    out = json.loads(run(*args, "--json", "--top", "100000").stdout)
    return out, [m for m in out["ranking"] if m["mismatches"] == 0 and m["all"]]


def mma_dots(a, b, c_bits, n):
    """Each element's dot product of n bf16 products on sm90 mma.sync via `bf16emu mma`."""
    lines = []
    for i in range(a.shape[0]):
        for j in range(b.shape[1]):
            vals = [f"{int(x):#06x}" for x in a[i]] + [f"{int(x):#06x}" for x in b[:, j]] + [f"{int(c_bits[i, j]):#010x}"]
            lines.append(" ".join(vals))
    p = subprocess.run([CLI, "mma", "--arch", "sm90", "--a-format", "bf16", "--k", str(n)],
                       input="\n".join(lines) + "\n", capture_output=True, text=True, check=True)
    d = np.array([int(t, 16) for t in p.stdout.split()], np.uint32).reshape(a.shape[0], b.shape[1])
    return d.view(np.float32)


failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


rng = np.random.default_rng(5)
a = rne_bf16((rng.standard_normal((M, K)) * 2.0 ** rng.integers(-5, 6, (M, K))).astype(np.float32))
b = rne_bf16((rng.standard_normal((K, N)) * 2.0 ** rng.integers(-5, 6, (K, N))).astype(np.float32))
c = (rng.standard_normal((M, N)) * 3).astype(np.float32)

with tempfile.TemporaryDirectory() as tmp:
    path = lambda n: os.path.join(tmp, n)
    np.save(path("a.npy"), a), np.save(path("b.npy"), b), np.save(path("c.npy"), c)

    # 1. IEEE fp32 multiply-add, two slices of 20, partials rounded to bf16 and added in bf16,
    #    C added at the end in bf16, D in bf16 (NumPy float32 arithmetic; a float32 sum of two
    #    bf16 values rounded to bf16 is the correctly rounded bf16 sum).
    av, bv = bf16_value(a), bf16_value(b)
    parts = []
    for s in range(2):
        acc = np.zeros((M, N), np.float32)
        for k in range(s * SLICE, (s + 1) * SLICE):
            acc = (acc + (av[:, k:k + 1] * bv[k:k + 1, :]).astype(np.float32)).astype(np.float32)
        parts.append(bf16_value(rne_bf16(acc)))
    tot = bf16_value(rne_bf16(parts[0] + parts[1]))
    d1 = rne_bf16(tot + bf16_value(rne_bf16(c)))
    np.save(path("d1.npy"), d1)
    out, ms = full_matches(["--a", path("a.npy"), "--b", path("b.npy"), "--c", path("c.npy"), "--result",
                            path("d1.npy"), "--result-format", "bf16"])
    check(out["match"] is not None, "IEEE member: a match")
    check(any(m["engine"].startswith("ieee-") and m["split_k"] == 2 and m["slice"] == 20 and
              m["partial_format"] == "bf16" and m["c_entry"] == "end" for m in ms),
          f"IEEE member among the matches: {[m['name'] for m in ms]}")

    # 2. sm90 mma.sync bf16, two slices of 20 (each padded to 32 by the instruction), C in the
    #    first slice, partials added in fp32, D fp32: each slice from `bf16emu mma`.
    zero = np.zeros((M, N), np.uint32)
    p0 = mma_dots(a[:, :SLICE], b[:SLICE], c.view(np.uint32), SLICE)
    p1 = mma_dots(a[:, SLICE:], b[SLICE:], zero, SLICE)
    d2 = (p0 + p1).astype(np.float32)
    np.save(path("d2.npy"), d2)
    args = ["--a", path("a.npy"), "--b", path("b.npy"), "--c", path("c.npy"), "--result", path("d2.npy")]
    out, ms = full_matches(args)
    check(any(m.get("arch") == "sm90" and m["split_k"] == 2 and m["slice"] == 20 and m["c_entry"] == "first"
              for m in ms), f"sm90 member among the matches: {[m['name'] for m in ms]}")
    check(len(ms) <= 3, f"few members reproduce the sm90 GEMM: {len(ms)}")
    text = run(*args).stdout
    check("match: sm90 mma.sync.aligned.m16n8k16" in text and "split_k=2 slice=20" in text, "text names sm90")

    # 3. One element 1 ulp off: no match; the sm90 member's first mismatch with its blocks.
    bad = d2.copy()
    bad.view(np.uint32)[4, 2] += 1
    np.save(path("bad.npy"), bad)
    args[-1] = path("bad.npy")
    text = run(*args).stdout
    check("no member reproduces the result" in text, "perturbed: no match")
    check("best member's first mismatch at (4, 2)" in text, "perturbed: element (4, 2)")
    check(f"member {int(d2.view(np.uint32)[4, 2]):#010x}" in text, "perturbed: the member's bits are the unperturbed")
    check("slice 0 block 0 k=0..15" in text and "slice 1 block 1 k=36..51" in text, "perturbed: the block trace")
    j = json.loads(run(*args, "--json").stdout)
    check(j["mismatch"]["element"] == [4, 2] and len(j["mismatch"]["blocks"]) == 4, "perturbed: JSON trace")

    # 4. Bad input: exit 2 with a message.
    for bad_args in (["--a", path("a.npy"), "--b", path("a.npy"), "--result", path("d2.npy")],
                     ["--a", path("nope.npy"), "--b", path("b.npy"), "--result", path("d2.npy")],
                     ["--a", path("a.npy"), "--b", path("b.npy"), "--result", path("d2.npy"), "--max-split", "0"]):
        p = run(*bad_args, check=False)
        check(p.returncode == 2 and p.stderr.startswith("bf16emu:"), f"bad input exits 2: {bad_args[-1]}")

if failures:
    sys.exit(f"{len(failures)} check(s) failed")
print("explain_gemm_cli: all checks passed")
