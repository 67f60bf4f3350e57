"""bf16emu's Python ops against torch's own op, in one process (docs/performance.md).

    PYTHONPATH=build/python /usr/bin/python3 bench/python_vs_torch.py [--n 10000000] [--reps 7]

For each op (f32 -> bf16, f32 -> fp16, bf16 add/mul, fp16 add/mul) on n elements (torch tensors
in, torch tensors out, as a torch user calls it), with every core and with one core: 7
repetitions, interleaved (each repetition times every op and both libraries once, the order of
the two alternating), then the median of each. torch runs with torch.set_num_threads(t),
bf16emu with threads=t. Prints the machine (lscpu's model, Highway's SIMD target), the load
average before and after, and the ratio bf16emu / torch (lower is better; 1.0 = as fast).
The results of both are compared bit for bit before timing (nearest-even, IEEE: torch's
conversions and bf16/fp16 ops round once, as bf16emu does).
"""

import argparse
import os
import statistics
import subprocess
import time

import numpy as np
import torch

import bf16emu


def cpu_model() -> str:
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            if line.startswith("Model name:"):
                return line.split(":", 1)[1].strip()
    except (OSError, subprocess.CalledProcessError):
        pass
    return "unknown"


def torch_capability() -> str:
    for line in torch.__config__.show().splitlines():
        if "CPU capability usage" in line:
            return line.split(":", 1)[1].strip()
    return "CPU capability unknown"


def load() -> str:
    return "{:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10_000_000)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--threads", default="all,1", help="comma-separated thread counts ('all' = every core)")
    args = ap.parse_args()
    cores = os.cpu_count() or 1
    counts = [cores if t == "all" else int(t) for t in args.threads.split(",")]

    g = torch.Generator().manual_seed(1)
    x = torch.randn(args.n, generator=g) * 100
    y = torch.randn(args.n, generator=g)
    a16, b16 = x.to(torch.bfloat16), y.to(torch.bfloat16)
    h16, k16 = x.to(torch.float16), y.to(torch.float16)

    ops = {
        "f32 -> bf16": (lambda: x.to(torch.bfloat16), lambda t: bf16emu.convert(x, to="bf16", threads=t)),
        "f32 -> fp16": (lambda: x.to(torch.float16), lambda t: bf16emu.convert(x, to="fp16", threads=t)),
        "bf16 add": (lambda: a16 + b16, lambda t: bf16emu.add(a16, b16, threads=t)),
        "bf16 mul": (lambda: a16 * b16, lambda t: bf16emu.mul(a16, b16, threads=t)),
        "fp16 add": (lambda: h16 + k16, lambda t: bf16emu.add(h16, k16, threads=t)),
        "fp16 mul": (lambda: h16 * k16, lambda t: bf16emu.mul(h16, k16, threads=t)),
    }
    for name, (tf, bf) in ops.items():
        want, got = tf(), bf(0)
        if not torch.equal(want.view(torch.int16), got.view(torch.int16)):
            raise SystemExit(f"{name}: bf16emu and torch differ")

    print(f"cpu: {cpu_model()}, {cores} logical cores; Highway target: {bf16emu._core.bulk_target()}; "
          f"torch {torch.__version__} ({torch_capability()})")
    print(f"n = {args.n}, {args.reps} interleaved repetitions, median; load average before: {load()}")
    times = {(name, t, lib): [] for name in ops for t in counts for lib in ("torch", "bf16emu")}
    for rep in range(args.reps):
        for t in counts:
            torch.set_num_threads(t)
            for name, (tf, bf) in ops.items():
                order = [("torch", tf), ("bf16emu", lambda: bf(t))]
                if rep % 2:
                    order.reverse()
                for lib, fn in order:
                    t0 = time.perf_counter()
                    fn()
                    times[(name, t, lib)].append(time.perf_counter() - t0)
    torch.set_num_threads(cores)
    print(f"load average after: {load()}")
    print()
    print("| op | threads | torch ms | bf16emu ms | ratio |")
    print("|---|---|---|---|---|")
    for t in counts:
        for name in ops:
            tm = statistics.median(times[(name, t, "torch")]) * 1e3
            bm = statistics.median(times[(name, t, "bf16emu")]) * 1e3
            print(f"| {name} | {t} | {tm:.2f} | {bm:.2f} | {bm / tm:.2f}x |")


if __name__ == "__main__":
    main()
