#!/usr/bin/env python3
"""Compare `bf16emu mma` with Microsoft's MMA-Sim (arXiv 2511.10909) on random vectors.

MMA-Sim is run from a checkout that is never committed here (MIT licence, Microsoft; nothing of
it is copied into this file): point --mmasim at it, e.g.

    git --git-dir=/work/.mirror/microsoft+MMA-Sim/repo archive HEAD | tar -x -C /tmp/mmasim
    /usr/bin/python3 scripts/compare_mmasim.py --mmasim /tmp/mmasim --bf16emu build/src/bf16emu

For every case (an MMA-Sim instruction and the `bf16emu mma` options of the preset that models
it) the script draws --count random vectors, computes D[0][0] with MMA-Sim's own simulator class
and with `bf16emu mma` (once with the default zero-term exponent, once with --zero-exp mmasim),
and prints the counts of differing D bit patterns. Exit status 1 if any vector differs under
--zero-exp mmasim (or, with --zero-exp default only, under the default); 2 on bad arguments.

Torch: MMA-Sim names torch.float8_* dtypes (and torch.uint16/uint32 for its NaN outputs), which
Debian's torch 1.13 lacks. MMA-Sim only uses the float8 tensors as containers of values (it
reads them with .item() and the dtype's minimum exponent), so the shim below gives it what it
needs: the missing dtype names as stand-in objects, and a Tensor subclass holding the exact
values in float64 whose .dtype reports the float8 stand-in. uint16/uint32 map to int16/int32,
whose .view() of MMA-Sim's NaN constants (0x7fff, 0x7fffffff) gives the same bits. With a torch
that has the float8 dtypes the shim steps aside and real float8 tensors are used.

What MMA-Sim cannot run, and the script therefore leaves out: e2m1 operands of the unscaled
and mxf8f6f4 kinds (its e2m1 container is uint8, which extract_significand_exponent rejects),
e3m2/e2m3 (a TODO there), an Inf C in the k64 block-scaled kinds (math.trunc(inf) raises).
Vectors on which MMA-Sim raises are counted as "raised", not compared.
"""

from __future__ import annotations

import argparse
import math
import os
import struct
import subprocess
import sys
import tempfile
import time

import numpy as np

# ---------------------------------------------------------------------------------------------
# The torch shim (see the module docstring).

import torch

_HAS_F8 = hasattr(torch, "float8_e4m3fn")


class FakeDtype:
    """Stands for a float8 dtype that this torch lacks; min_exp and value decoding live here."""

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return f"torch.{self.name} (shim)"


class F8Tensor(torch.Tensor):
    """Exact float64 values standing in for a float8 tensor: .dtype reports the stand-in."""

    _KEEP = None  # functions whose tensor result is still a float8 tensor (views, cpu, abs)

    @staticmethod
    def __new__(cls, data: torch.Tensor, fake: FakeDtype):
        t = torch.Tensor._make_subclass(cls, data.to(torch.float64))
        t._fake = fake
        return t

    @property
    def dtype(self):  # noqa: D401 - the stand-in float8 dtype
        return self._fake

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        fake = None
        for a in list(args) + list(kwargs.values()):
            if isinstance(a, F8Tensor):
                fake = a._fake
                break
        if cls._KEEP is None:
            cls._KEEP = {torch.Tensor.__getitem__, torch.Tensor.cpu, torch.Tensor.abs, torch.abs}
        with torch._C.DisableTorchFunction():
            ret = func(*args, **kwargs)
            if isinstance(ret, torch.Tensor):
                ret = ret.as_subclass(torch.Tensor)
        if func in cls._KEEP and isinstance(ret, torch.Tensor) and fake is not None:
            return F8Tensor(ret, fake)
        return ret


def install_shim() -> None:
    if _HAS_F8:
        return
    for name in ("float8_e4m3fn", "float8_e5m2", "float8_e8m0fnu", "float8_e4m3fnuz", "float8_e5m2fnuz"):
        setattr(torch, name, FakeDtype(name))
    if not hasattr(torch, "uint16"):
        torch.uint16 = torch.int16
    if not hasattr(torch, "uint32"):
        torch.uint32 = torch.int32


# ---------------------------------------------------------------------------------------------
# Formats: bit patterns <-> values (written from the formats' definitions).

WIDTH = {"fp64": 64, "fp32": 32, "fp16": 16, "bf16": 16, "e4m3": 8, "e5m2": 8, "ue8m0": 8, "ue4m3": 8,
         "e2m1": 4}


def e4m3_value(bits: int) -> float:
    s = -1.0 if bits & 0x80 else 1.0
    e, f = (bits >> 3) & 0xF, bits & 7
    if e == 0xF and f == 7:
        return math.nan
    return s * (f / 8.0 * 2.0**-6 if e == 0 else (1 + f / 8.0) * 2.0 ** (e - 7))


def e5m2_value(bits: int) -> float:
    s = -1.0 if bits & 0x80 else 1.0
    e, f = (bits >> 2) & 0x1F, bits & 3
    if e == 0x1F:
        return s * math.inf if f == 0 else math.nan
    return s * (f / 4.0 * 2.0**-14 if e == 0 else (1 + f / 4.0) * 2.0 ** (e - 15))


def ue8m0_value(bits: int) -> float:
    return math.nan if bits == 0xFF else 2.0 ** (bits - 127)


def e2m1_value(bits: int) -> float:
    mag = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0][bits & 7]
    return -mag if bits & 8 else mag


F8_DECODE = {"e4m3": e4m3_value, "e5m2": e5m2_value, "ue4m3": e4m3_value, "ue8m0": ue8m0_value}
F8_TORCH = {"e4m3": "float8_e4m3fn", "e5m2": "float8_e5m2", "ue4m3": "float8_e4m3fn", "ue8m0": "float8_e8m0fnu"}


def tensor_of(fmt: str, bits: list[int], shape) -> torch.Tensor:
    """A torch tensor of the given shape holding these bit patterns of fmt (as MMA-Sim takes it)."""
    if fmt in F8_DECODE:
        vals = torch.tensor([F8_DECODE[fmt](b) for b in bits], dtype=torch.float64).reshape(shape)
        dt = getattr(torch, F8_TORCH[fmt])
        if _HAS_F8:
            if fmt == "ue8m0":  # bits as given
                return torch.tensor(bits, dtype=torch.uint8).reshape(shape).view(dt)
            return torch.tensor(bits, dtype=torch.uint8).reshape(shape).view(dt)
        return F8Tensor(vals, dt)
    if fmt == "fp64":
        a = np.array(bits, dtype=np.uint64).view(np.int64)
        return torch.from_numpy(a.copy()).reshape(shape).view(torch.float64)
    if fmt == "fp32":
        a = np.array(bits, dtype=np.uint32).view(np.int32)
        return torch.from_numpy(a.copy()).reshape(shape).view(torch.float32)
    if fmt in ("fp16", "bf16"):
        a = np.array(bits, dtype=np.uint16).view(np.int16)
        return torch.from_numpy(a.copy()).reshape(shape).view(torch.float16 if fmt == "fp16" else torch.bfloat16)
    raise ValueError(fmt)


def bits_of(fmt: str, t: torch.Tensor) -> int:
    t = t.reshape(-1)[:1]
    if fmt == "fp64":
        return int(t.view(torch.int64).item()) & (2**64 - 1)
    if fmt == "fp32":
        return int(t.view(torch.int32).item()) & 0xFFFFFFFF
    return int(t.view(torch.int16).item()) & 0xFFFF


def is_nan(fmt: str, bits: int) -> bool:
    if fmt == "fp64":
        return (bits >> 52) & 0x7FF == 0x7FF and bits & (2**52 - 1) != 0
    if fmt == "fp32":
        return (bits >> 23) & 0xFF == 0xFF and bits & 0x7FFFFF != 0
    return (bits >> 10) & 0x1F == 0x1F and bits & 0x3FF != 0


# ---------------------------------------------------------------------------------------------
# Random operands: each vector takes one of four classes, chosen so that zero terms are common
# (the zero-term exponent is where the models may differ).

FIELDS = {"fp64": (11, 52), "fp32": (8, 23), "fp16": (5, 10), "bf16": (8, 7), "e4m3": (4, 3), "e5m2": (5, 2),
          "e2m1": (2, 1)}


def draw(rng, fmt: str, cls: int, zero_one_in: int, lo: int = -8, hi: int = 8) -> int:
    e_bits, m_bits = FIELDS[fmt]
    width = 1 + e_bits + m_bits
    bias = (1 << (e_bits - 1)) - 1
    if zero_one_in and rng.integers(zero_one_in) == 0:
        return int(rng.integers(2)) << (width - 1)  # +-0
    if cls == 0:  # any bit pattern
        return int(rng.integers(0, 2**width, dtype=np.uint64)) if width == 64 else int(rng.integers(2**width))
    emax_field = (1 << e_bits) - 2
    if cls == 1:  # moderate normal values
        e = int(rng.integers(max(1, bias + lo), min(emax_field, bias + hi) + 1))
    elif cls == 2:  # anywhere in the finite range, subnormals included
        e = int(rng.integers(0, emax_field + 1))
    else:  # small: subnormals and the lowest normals
        e = int(rng.integers(0, 3))
    frac = int(rng.integers(0, 2**m_bits, dtype=np.uint64)) if m_bits > 32 else int(rng.integers(2**m_bits))
    v = (int(rng.integers(2)) << (width - 1)) | (e << m_bits) | frac
    if fmt == "e4m3" and (v & 0x7F) == 0x7F:
        v &= ~1  # not the NaN
    return v


def draw_scale(rng, fmt: str, cls: int) -> int:
    if fmt == "ue4m3":
        if cls == 1:
            return 0x30 + int(rng.integers(16))
        return 0 if rng.integers(6) == 0 else int(rng.integers(256))
    if cls == 1:
        return 127 + int(rng.integers(-6, 7))
    return int(rng.integers(256))


# ---------------------------------------------------------------------------------------------
# Cases.


class Case:
    def __init__(self, name, sim, args, a, b, out, k, scale=None, vec=0, new=False, c_fmt=None):
        self.name, self.sim, self.args = name, sim, args
        self.a, self.b, self.out, self.k = a, b, out, k
        self.c = c_fmt or out
        self.scale, self.vec, self.new = scale, vec, new


def cases(nv_ptx) -> list[Case]:
    """(MMA-Sim simulator, `bf16emu mma` options) pairs. new=True: the presets of issue 33."""
    mma, wg, tc, mbs, tbs = (nv_ptx.mma, nv_ptx.wgmma, nv_ptx.tcgen05mma, nv_ptx.mma_block_scale,
                             nv_ptx.tcgen05mma_block_scale)
    out = []
    # Issue 33: f64 m8n8k4 on sm86 (MMA-Sim: Ampere), sm89, sm100, sm120.
    for arch, gen in (("sm86", "Ampere"), ("sm89", "Ada Lovelace"), ("sm100", "Blackwell"),
                      ("sm120", "RTX Blackwell")):
        out.append(Case(f"{arch} mma m8n8k4 f64", lambda g=gen: mma(g, "m8n8k4.f64.f64.f64.f64"),
                        ["--arch", arch, "--instr", "mma", "--a-format", "fp64", "--out", "fp64"], "fp64", "fp64",
                        "fp64", 4, new=True))
    # Issue 33: tcgen05 kind::f16 with f16 x bf16 and bf16 x f16, f32 D.
    for a, b in (("fp16", "bf16"), ("bf16", "fp16")):
        q = f"m128n8k16.f32.{a.replace('fp', 'f')}.{b.replace('fp', 'f')}"
        out.append(Case(f"sm100 tcgen05 kind::f16 {a} x {b} -> fp32", lambda q=q: tc("Blackwell", q),
                        ["--arch", "sm100", "--instr", "tcgen05", "--a-format", a, "--b-format", b], a, b, "fp32", 16,
                        new=True))
    # Issue 33: sm120 mxf4nvf4 with ue4m3 factors on 32-element blocks.
    out.append(Case("sm120 mma mxf4nvf4 ue4m3 block32",
                    lambda: mbs("RTX Blackwell", "m16n8k64.block32.f32.e2m1.e2m1.f32.ue4m3"),
                    ["--arch", "sm120", "--kind", "mxf4nvf4", "--a-format", "e2m1", "--scale-format", "ue4m3",
                     "--scale-vec", "32"], "e2m1", "e2m1", "fp32", 64, scale="ue4m3", vec=32, new=True))

    # The presets that both have (--set all).
    nvq = {"f64": "fp64", "f32": "fp32", "tf32": "tf32", "f16": "fp16", "bf16": "bf16", "e4m3": "e4m3",
           "e5m2": "e5m2", "e2m1": "e2m1"}
    archs = {"Volta": "sm70", "Turing": "sm75", "Ampere": "sm80", "Ada Lovelace": "sm89", "Hopper": "sm90",
             "Blackwell": "sm100", "RTX Blackwell": "sm120"}
    from mmasim.isa.nv_ptx.nv_mma import arch_mma_qualifiers, arch_mma_block_scale_qualifiers

    for gen, quals in arch_mma_qualifiers.items():
        for q in dict.fromkeys(quals):  # RTX Blackwell lists some fp8 shapes twice
            shape, d, a, b, c = q.split(".")
            k = int(shape.split("k")[1])
            if "e2m1" in (a, b) or "tf32" in (a, b) or (a == "f64" and shape == "m8n8k4"):
                continue  # e2m1: not runnable in MMA-Sim; tf32: its own container; f64 m8n8k4: above
            args = ["--arch", archs[gen], "--instr", "mma", "--a-format", nvq[a], "--out", nvq[d],
                    "--shape-k", str(k)]
            if b != a:
                args += ["--b-format", nvq[b]]
            if c != d:
                args += ["--c-format", nvq[c]]
            out.append(Case(f"{archs[gen]} mma {q}", lambda g=gen, q=q: mma(g, q), args, nvq[a], nvq[b], nvq[d], k,
                            c_fmt=nvq[c]))
    for gen, quals in arch_mma_block_scale_qualifiers.items():
        for q in quals:
            shape, block, d, a, b, c, s = q.split(".")
            if "e2m1" in (a, b) and "k32" in shape:
                continue
            k, vec = int(shape.split("k")[1]), int(block[-2:])
            kind = "mxf8f6f4" if k == 32 else ("mxf4" if s == "ue8m0" and vec == 32 else "mxf4nvf4")
            if k == 64 and s == "ue4m3" and vec == 32:
                continue  # the issue-33 case above
            args = ["--arch", archs[gen], "--kind", kind, "--a-format", nvq[a], "--b-format", nvq[b],
                    "--scale-format", s, "--scale-vec", str(vec)]
            out.append(Case(f"sm120 mma {kind} {q}", lambda g=gen, q=q: mbs(g, q), args, nvq[a], nvq[b], "fp32", k,
                            scale=s, vec=vec))
    for q in ("m64n8k16.f32.f16.f16", "m64n8k16.f16.f16.f16", "m64n8k16.f32.bf16.bf16"):
        _, d, a, b = q.split(".")
        out.append(Case(f"sm90 wgmma {q}", lambda q=q: wg("Hopper", q),
                        ["--arch", "sm90", "--instr", "wgmma", "--a-format", nvq[a], "--out", nvq[d]], nvq[a], nvq[b],
                        nvq[d], 16))
    for a in ("e4m3", "e5m2"):
        for b in ("e4m3", "e5m2"):
            for d in ("f32", "f16"):
                q = f"m64n8k32.{d}.{a}.{b}"
                out.append(Case(f"sm90 wgmma {q}", lambda q=q: wg("Hopper", q),
                                ["--arch", "sm90", "--instr", "wgmma", "--a-format", a, "--b-format", b, "--out",
                                 nvq[d]], a, b, nvq[d], 32))
    for q in ("m128n8k16.f32.f16.f16", "m128n8k16.f32.bf16.bf16", "m128n8k16.f16.f16.f16"):
        _, d, a, b = q.split(".")
        out.append(Case(f"sm100 tcgen05 {q}", lambda q=q: tc("Blackwell", q),
                        ["--arch", "sm100", "--instr", "tcgen05", "--a-format", nvq[a], "--out", nvq[d]], nvq[a],
                        nvq[b], nvq[d], 16))
    for a in ("e4m3", "e5m2"):
        for b in ("e4m3", "e5m2"):
            for d in ("f32", "f16"):
                q = f"m128n8k32.{d}.{a}.{b}"
                out.append(Case(f"sm100 tcgen05 kind::f8f6f4 {q}", lambda q=q: tc("Blackwell", q),
                                ["--arch", "sm100", "--instr", "tcgen05", "--kind", "f8f6f4", "--a-format", a,
                                 "--b-format", b, "--out", nvq[d]], a, b, nvq[d], 32))
            q = f"m128n8k32.block32.f32.{a}.{b}.ue8m0"
            out.append(Case(f"sm100 tcgen05 kind::mxf8f6f4 {q}", lambda q=q: tbs("Blackwell", q),
                            ["--arch", "sm100", "--instr", "tcgen05", "--kind", "mxf8f6f4", "--a-format", a,
                             "--b-format", b], a, b, "fp32", 32, scale="ue8m0", vec=32))
    for kind, s, vec in (("mxf4", "ue8m0", 32), ("mxf4nvf4", "ue8m0", 16), ("mxf4nvf4", "ue4m3", 16)):
        q = f"m128n8k64.block{vec}.f32.e2m1.e2m1.{s}"
        out.append(Case(f"sm100 tcgen05 kind::{kind} {q}", lambda q=q: tbs("Blackwell", q),
                        ["--arch", "sm100", "--instr", "tcgen05", "--kind", kind, "--a-format", "e2m1",
                         "--scale-format", s, "--scale-vec", str(vec)], "e2m1", "e2m1", "fp32", 64, scale=s, vec=vec))
    return out


# ---------------------------------------------------------------------------------------------
# Running one case.


def make_vectors(case: Case, n: int, seed: int):
    rng = np.random.default_rng(seed)
    vecs = []
    for i in range(n):
        cls = i % 4
        zero = 0 if cls == 0 else 4
        if case.a == "fp64":  # values near each other so that the fma chain rounds
            a = [draw(rng, "fp64", cls, zero, -30, 30) for _ in range(case.k)]
            b = [draw(rng, "fp64", cls, zero, -30, 30) for _ in range(case.k)]
        else:
            a = [draw(rng, case.a, cls, zero) for _ in range(case.k)]
            b = [draw(rng, case.b, cls, zero) for _ in range(case.k)]
        c = draw(rng, case.c, cls, 3 if cls else 0, -20, 20)
        if case.scale and case.k == 64 and (c >> 23) & 0xFF == 0xFF and c & 0x7FFFFF == 0:
            c = 0  # an Inf C: MMA-Sim raises in the k64 kinds
        ns = case.k // case.vec if case.scale else 0
        sa = [draw_scale(rng, case.scale, cls) for _ in range(ns)]
        sb = [draw_scale(rng, case.scale, cls) for _ in range(ns)]
        vecs.append((a, b, sa, sb, c))
    return vecs


def line_of(case: Case, v) -> str:
    a, b, sa, sb, c = v
    hexw = lambda fmt, x: f"0x{x:0{max(1, WIDTH.get(fmt, 16) // 4)}x}"
    parts = [hexw(case.a, x) for x in a] + [hexw(case.b, x) for x in b]
    parts += [f"0x{x:02x}" for x in sa] + [f"0x{x:02x}" for x in sb] + [hexw(case.c, c)]
    return " ".join(parts)


def run_bf16emu(exe: str, case: Case, vecs, zero_exp: str | None) -> list[int]:
    with tempfile.NamedTemporaryFile("w", suffix=".vec", delete=False) as f:
        for v in vecs:
            f.write(line_of(case, v) + "\n")
        path = f.name
    try:
        cmd = [exe, "mma", *case.args, "--in", path] + (["--zero-exp", zero_exp] if zero_exp else [])
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)}: exit {r.returncode}: {r.stderr.strip()}")
        return [int(t, 16) for t in r.stdout.split()]
    finally:
        os.unlink(path)


def run_mmasim(sim, case: Case, v) -> int:
    a, b, sa, sb, c = v
    k = case.k
    if case.scale:  # block-scaled: A (1 x k/packing), B (k/packing x 1), scales (1 x k/vec), (k/vec x 1)
        if sim.packing == 2:
            A = torch.tensor([a[i] | (a[i + 1] << 4) for i in range(0, k, 2)], dtype=torch.uint8).reshape(1, k // 2)
            B = torch.tensor([b[i] | (b[i + 1] << 4) for i in range(0, k, 2)], dtype=torch.uint8).reshape(k // 2, 1)
        else:
            A, B = tensor_of(case.a, a, (1, k)), tensor_of(case.b, b, (k, 1))
        SA = tensor_of(case.scale, sa, (1, len(sa)))
        SB = tensor_of(case.scale, sb, (len(sb), 1))
        D = sim(A, B, tensor_of(case.c, [c], (1, 1)), SA, SB)
    else:
        D = sim(tensor_of(case.a, a, (1, k)), tensor_of(case.b, b, (k, 1)), tensor_of(case.c, [c], (1, 1)))
    return bits_of(case.out, D)


def compare(case: Case, exe: str, n: int, seed: int, modes: list[str | None]) -> dict:
    sim = case.sim()
    sim.m = sim.n = 1  # MMA-Sim's own arithmetic on D[0][0] alone (its loops run over m x n)
    vecs = make_vectors(case, n, seed)
    t0 = time.time()
    ref, raised = [], 0
    for v in vecs:
        try:
            ref.append(run_mmasim(sim, case, v))
        except (OverflowError, ValueError, AssertionError):
            ref.append(None)
            raised += 1
    t_sim = time.time() - t0
    res = {"case": case.name, "vectors": n, "raised": raised, "seconds": round(t_sim, 1)}
    for mode in modes:
        ours = run_bf16emu(exe, case, vecs, mode)
        if len(ours) != n:
            raise RuntimeError(f"{case.name}: bf16emu printed {len(ours)} lines for {n} vectors")
        diff, nan_class, first = 0, 0, None
        for v, r, o in zip(vecs, ref, ours):
            if r is None or r == o:
                continue
            if is_nan(case.out, r) and is_nan(case.out, o):
                nan_class += 1  # both NaN, other payloads (f64: the host fma's NaN)
                continue
            diff += 1
            if first is None:
                first = f"{line_of(case, v)} -> MMA-Sim {r:#x}, bf16emu {o:#x}"
        res[mode or "default"] = {"differ": diff, "nan_payload_only": nan_class, "first": first}
    return res


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mmasim", required=True, help="directory of an MMA-Sim checkout (holds mmasim/)")
    ap.add_argument("--bf16emu", required=True, help="the bf16emu executable")
    ap.add_argument("--count", type=int, default=10000, help="random vectors per case (default 10000)")
    ap.add_argument("--set", choices=("new", "all"), default="new",
                    help="new: the issue-33 presets; all: every case both model")
    ap.add_argument("--only", default="", help="run the cases whose name contains this text")
    ap.add_argument("--zero-exp", choices=("both", "default", "mmasim"), default="both")
    ap.add_argument("--seed", type=int, default=33)
    o = ap.parse_args()
    if not os.path.isdir(os.path.join(o.mmasim, "mmasim")):
        print(f"compare_mmasim: --mmasim {o.mmasim!r} holds no mmasim/ package", file=sys.stderr)
        return 2
    if not os.access(o.bf16emu, os.X_OK):
        print(f"compare_mmasim: --bf16emu {o.bf16emu!r} is not an executable", file=sys.stderr)
        return 2
    if o.count < 1:
        print("compare_mmasim: --count must be >= 1", file=sys.stderr)
        return 2
    install_shim()
    sys.path.insert(0, o.mmasim)
    from mmasim.simulator import nv_ptx  # noqa: E402  (after the shim)

    modes = {"both": [None, "mmasim"], "default": [None], "mmasim": ["mmasim"]}[o.zero_exp]
    gate = "mmasim" if "mmasim" in modes else "default"
    todo = [c for c in cases(nv_ptx) if (c.new or o.set == "all") and o.only in c.name]
    if not todo:
        print("compare_mmasim: no case matches", file=sys.stderr)
        return 2
    print(f"torch {torch.__version__} ({'native float8' if _HAS_F8 else 'float8 shim'}), "
          f"{o.count} vectors per case, seed {o.seed}")
    bad = 0
    for i, case in enumerate(todo):
        r = compare(case, o.bf16emu, o.count, o.seed + i, modes)
        cols = "  ".join(f"{m}: {r[m]['differ']} differ" + (f" ({r[m]['nan_payload_only']} NaN payloads)"
                                                              if r[m]["nan_payload_only"] else "")
                         for m in ("default", "mmasim") if m in r)
        print(f"{case.name:60s} {r['vectors']:6d} vectors, MMA-Sim raised {r['raised']}; {cols}", flush=True)
        for m in ("default", "mmasim"):
            if m in r and r[m]["first"]:
                print(f"    first ({m}): {r[m]['first']}")
        bad += r[gate]["differ"]
    print(f"{len(todo)} cases; {'0 differences' if bad == 0 else f'{bad} differences'} under --zero-exp "
          f"{gate if gate == 'mmasim' else 'default'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
