"""Matrix products on the tensor-core models: gemm, mma, explain_gemm."""

from __future__ import annotations

import os

import numpy as np

from . import _core
from ._args import (
    INT_MAX, ROUNDING_DEFAULT, _bool, _count, _cpu_tensor, _format_name, _int, _is_tensor, _name, _options,
    _pair, _threads)
from ._bits import _BITS_DTYPE, _Kind, _WIDTH, from_bits, to_bits


def gemm(a, b, c=None, *, arch: str = "sm80", kind: str | None = None, a_format: str | None = None,
         c_format: str | None = None, trace=None, threads: int = 0, split_k: int = 1, slice: int | None = None,
         order: str = "sequential", partial_format: str | None = None, c_entry: str = "first",
         out_format: str | None = None, b_format: str | None = None, scale_a=None, scale_b=None,
         scale_format: str | None = None, scale_vec: int | None = None, zero_exp: str | None = None,
         _single: bool = False):
    """D = A B + C on the tensor-core model of `arch` (tc presets, docs/tensor-cores.md): K is
    cut into the instruction's k chunks, each a chain of hardware blocks. a (M x K) and b
    (K x N) in the input format (bf16/fp16/tf32/e4m3/e5m2: from the dtype, or a_format= for
    uint bits), c (M x N) in the accumulator format (fp32 or fp16; None: zeros in fp32, or in
    c_format). kind: mma, wgmma or tcgen05 (default: the architecture's own). Returns D in
    c's kind; with trace=(i, j), returns (D, trace) where trace lists the blocks of D[i, j].

    >>> a = bf16emu.convert(np.ones((16, 32), np.float32), to="bf16")
    >>> b = bf16emu.convert(np.ones((32, 8), np.float32), to="bf16")
    >>> d, tr = bf16emu.gemm(a, b, a_format="bf16", arch="sm80", trace=(0, 0))
    >>> d.shape, float(d[0, 0]), len(tr["blocks"])
    ((16, 8), 32.0, 4)

    Split-k and the sum of the partials (the GEMM family of explain_gemm, docs/explain-gemm.md):
    split_k= slices of ceil(K / split_k) products (or slice= products each), each computed on
    the preset (arch= may also be "ieee-fma" or "ieee-mul-add": plain binary32 arithmetic in k
    order), each partial rounded to partial_format (fp32, the default, or D's format), added
    in order= ("sequential" or "pairwise") in that format; c_entry="first" (C enters slice 0)
    or "end" (C added after the partials); out_format= rounds D into fp32, fp16 or bf16
    (default: C's format). With trace=(i, j) the trace also holds each slice's partial and
    the member.

    >>> a = bf16emu.convert(np.float32([[1.0, 2.0**-9, 2.0**-9, 2.0**-9]]), to="bf16")
    >>> b = bf16emu.convert(np.ones((4, 1), np.float32), to="bf16")
    >>> d1 = bf16emu.gemm(a, b, a_format="bf16", arch="ieee-mul-add", out_format="bf16")
    >>> d2 = bf16emu.gemm(a, b, a_format="bf16", arch="ieee-mul-add", out_format="bf16", split_k=2, partial_format="bf16")
    >>> hex(int(d1[0, 0])), hex(int(d2[0, 0]))  # 1 + 3 * 2^-9 rounded once; (1 + 2^-9 -> 1) + 2^-8: a tie
    ('0x3f81', '0x3f80')

    Mixed-format and block-scaled kinds (sm100 tcgen05, sm120 mma.sync; docs/tensor-cores.md):
    kind="f8f6f4", "mxf8f6f4", "mxf4" or "mxf4nvf4"; a and b as uint8 bit patterns with
    a_format= and b_format= (e4m3, e5m2, e3m2, e2m3, e2m1; one code per byte), scale_a (M x K/vec)
    and scale_b (K/vec x N) as uint8 bit patterns of scale_format= (ue8m0 or ue4m3), scale_vec=
    16 or 32 (default: the kind's). D in fp32 (or fp16 for kind::f8f6f4 with a fp16 c).

    >>> a = np.zeros((1, 64), np.uint8); a[0, [0, 16, 32]] = 0x2  # e2m1 1.0
    >>> d = bf16emu.gemm(a, a.T.copy(), arch="sm120", kind="mxf4nvf4", a_format="e2m1", scale_format="ue4m3",
    ...                  scale_vec=32, scale_a=np.uint8([[0x40, 0x48]]), scale_b=np.uint8([[0x38], [0x38]]))
    >>> float(d[0, 0])  # 1*2 + 1*2 (factor 0 covers k 0..31) + 1*4
    8.0

    AMD CDNA MFMA (arch="cdna1" .. "cdna3", or mi100/gfx908 ...): kind= names the instruction
    ("v_mfma_f32_32x32x8_bf16"), or a_format= (or a's dtype) picks the arch's first of that type;
    fp8/bf8 (FNUZ) operands as uint8 bit patterns, xf32 as float32. C and D fp32 (fp64 for f64).

    zero_exp="mmasim" gives zero terms MMA-Sim's exponents instead of the preset's e_zero (NVIDIA
    presets and kinds; docs/tensor-cores.md, "The zero-term exponent").
    """
    arch = _name(arch, "arch")
    kind = None if kind is None else _name(kind, "kind")
    zero_exp = None if zero_exp is None else _name(zero_exp, "zero_exp")
    _threads(threads)
    if _core.is_amd_arch(arch):
        if zero_exp is not None:
            raise ValueError("argument 'zero_exp' applies to the NVIDIA presets, not to the AMD models")
        return _gemm_amd(a, b, c, arch, kind, a_format, c_format, trace, threads, _single)
    if kind in _SCALED_KINDS or scale_a is not None or scale_b is not None or scale_format is not None:
        return _gemm_scaled(a, b, c, arch, kind, a_format, b_format, c_format, scale_a, scale_b, scale_format,
                            scale_vec, zero_exp, trace, threads, _single)
    a_bits, fin, kind_a = to_bits(a, a_format, "a", "a_format")
    b_bits, fb, _ = to_bits(b, a_format or fin, "b", "a_format")
    if fb != fin:
        raise TypeError(f"argument 'b' holds {fb} but argument 'a' holds {fin}")
    if b_format is not None and _format_name(b_format, "b_format") != fin:
        raise ValueError(f"argument 'b_format': the {arch} presets of gemm take B in A's format {fin} "
                         f"(other B formats: kind='f8f6f4' and the block-scaled kinds)")
    split_k = _int(split_k, "split_k", 1, INT_MAX)
    order, c_entry = _name(order, "order"), _name(c_entry, "c_entry")
    if (arch in _IEEE_ENGINES or split_k != 1 or slice is not None or order != "sequential"
            or partial_format is not None or c_entry != "first" or out_format is not None):
        if zero_exp is not None:
            raise ValueError("argument 'zero_exp' is not available with split_k, slice, order, partial_format, "
                             "c_entry or out_format")
        return _gemm_family(a_bits, fin, kind_a, b_bits, c, arch, kind, c_format, trace, threads, split_k, slice,
                            order, partial_format, c_entry, out_format)
    if c is None:
        fout = _format_name(c_format, "c_format") if c_format is not None else "fp32"
        if a_bits.ndim != 2 or b_bits.ndim != 2:
            raise ValueError("arguments 'a' and 'b' must be 2-d (M x K, K x N)")
        c_bits = np.zeros((a_bits.shape[0], b_bits.shape[1]), dtype=_BITS_DTYPE[_WIDTH[fout]])
        kind_c = _Kind(kind_a.torch, True)
    else:
        c_bits, fout, kind_c = to_bits(c, c_format, "c", "c_format")
    ti, tj = (-1, -1) if trace is None else _pair(trace)
    _options(ROUNDING_DEFAULT, "after", "ieee", False, False, False, None, threads)
    d_bits, blocks, info = _core.gemm(a_bits, b_bits, c_bits, fin, fout, arch, kind or "", _single, ti, tj,
                                      int(threads), zero_exp or "")
    d = from_bits(d_bits, fout, kind_c)
    if trace is None:
        return d
    info["element"] = (ti, tj)
    info["blocks"] = blocks
    return d, info


_IEEE_ENGINES = ("ieee-fma", "ieee-mul-add")
_SCALED_KINDS = ("f8f6f4", "mxf8f6f4", "mxf4", "mxf4nvf4")


def _u64(bits) -> np.ndarray:
    return np.ascontiguousarray(bits, dtype=np.uint64)


def _c_bits(c, c_format, fout_default, shape, kind_a):
    """C's bit patterns, its format and kind: zeros of fout_default when c is None."""
    if c is None:
        fout = _format_name(c_format, "c_format") if c_format is not None else fout_default
        return np.zeros(shape, dtype=_BITS_DTYPE[_WIDTH[fout]]), fout, _Kind(kind_a.torch, True)
    return to_bits(c, c_format, "c", "c_format")


def _byte_bits(x, arg: str):
    """uint8 bit patterns (scale factors, FNUZ fp8/bf8) of an array or tensor; None: an empty (0, 0)."""
    if x is None:
        return np.zeros((0, 0), np.uint8)
    a = _cpu_tensor(x, arg).detach().numpy() if _is_tensor(x) else np.asarray(x)
    if a.dtype != np.uint8:
        raise TypeError(f"argument '{arg}' must hold uint8 bit patterns, got dtype {a.dtype}")
    return np.ascontiguousarray(a)


def _gemm_scaled(a, b, c, arch, kind, a_format, b_format, c_format, scale_a, scale_b, scale_format, scale_vec,
                 zero_exp, trace, threads, single):
    if kind not in _SCALED_KINDS:
        raise ValueError(f"scale_a, scale_b and scale_format need kind= one of {', '.join(_SCALED_KINDS)}, "
                         f"got {str(kind)[:80]!r}")
    if trace is not None:
        raise ValueError("argument 'trace' is not available for the mixed-format and block-scaled kinds")
    if kind != "f8f6f4" and (scale_a is None or scale_b is None):
        raise ValueError(f"kind '{kind}' needs scale_a and scale_b (uint8 bit patterns of the scale factors)")
    a_bits, fa, kind_a = to_bits(a, a_format, "a", "a_format")
    b_bits, fb, _ = to_bits(b, b_format if b_format is not None else a_format, "b",
                            "b_format" if b_format is not None else "a_format")
    scale_format = None if scale_format is None else _name(scale_format, "scale_format")
    if a_bits.ndim != 2 or b_bits.ndim != 2:
        raise ValueError("arguments 'a' and 'b' must be 2-d (M x K, K x N)")
    c_bits, fout, kind_c = _c_bits(c, c_format, "fp32", (a_bits.shape[0], b_bits.shape[1]), kind_a)
    vec = 0 if scale_vec is None else _count(scale_vec, "scale_vec", 1)
    _options(ROUNDING_DEFAULT, "after", "ieee", False, False, False, None, threads)
    d = _core.gemm_scaled(_u64(a_bits), _u64(b_bits), _u64(c_bits), _byte_bits(scale_a, "scale_a"),
                          _byte_bits(scale_b, "scale_b"), fa, fb, fout, arch, kind, scale_format or "", vec,
                          zero_exp or "", single, int(threads))
    return from_bits(d.astype(_BITS_DTYPE[_WIDTH[fout]]), fout, kind_c)


def _amd_operand(x, fmt: str, arg: str):
    """(uint64 bit patterns, kind) of an AMD operand of the instruction's type fmt."""
    if fmt in ("fp8", "bf8"):  # FNUZ bytes: no float dtype holds them
        return _u64(_byte_bits(x, arg)), _Kind(_is_tensor(x), False)
    bits, _, kind = to_bits(x, "fp32" if fmt == "xf32" else fmt, arg)
    return _u64(bits), kind


def _gemm_amd(a, b, c, arch, kind, a_format, c_format, trace, threads, single):
    if trace is not None:
        raise ValueError("argument 'trace' is not available for the AMD models")
    fmt = a_format
    if kind is None and fmt is None:  # the instruction from a's dtype
        _, fmt, _ = to_bits(a, None, "a")
    fa, fb, fout, _ = _core.amd_formats(arch, kind or "", fmt or "", "fp32")
    a_bits, kind_a = _amd_operand(a, fa, "a")
    b_bits, _ = _amd_operand(b, fb, "b")
    if a_bits.ndim != 2 or b_bits.ndim != 2:
        raise ValueError("arguments 'a' and 'b' must be 2-d (M x K, K x N)")
    c_bits, fc, kind_c = _c_bits(c, c_format, fout, (a_bits.shape[0], b_bits.shape[1]), kind_a)
    if fc != fout:
        raise ValueError(f"argument 'c': the instruction takes C in {fout}, not {fc}")
    _options(ROUNDING_DEFAULT, "after", "ieee", False, False, False, None, threads)
    d = _core.gemm_amd(a_bits, b_bits, _u64(c_bits), arch, kind or "", fmt or "", "fp32", single, int(threads))
    return from_bits(d.astype(_BITS_DTYPE[_WIDTH[fout]]), fout, kind_c)


def _member(arch, kind, accumulator, split_k, slice, order, partial, c_entry) -> dict:
    if order not in ("sequential", "pairwise"):
        raise ValueError(f"argument 'order' must be 'sequential' or 'pairwise', got {str(order)[:80]!r}")
    if c_entry not in ("first", "end"):
        raise ValueError(f"argument 'c_entry' must be 'first' or 'end', got {str(c_entry)[:80]!r}")
    engine = arch if arch in _IEEE_ENGINES else "preset"
    return {"engine": engine, "arch": "" if engine != "preset" else arch, "kind": kind or "",
            "accumulator": accumulator, "split_k": _count(split_k, "split_k", 1),
            "slice": 0 if slice is None else _count(slice, "slice", 1), "order": order,
            "partial_format": partial, "c_entry": c_entry}


def _gemm_family(a_bits, fin, kind_a, b_bits, c, arch, kind, c_format, trace, threads, split_k, slice, order,
                 partial_format, c_entry, out_format):
    if c is None:
        fc = _format_name(c_format, "c_format") if c_format is not None else "fp32"
        c_bits, kind_c = None, _Kind(kind_a.torch, True)
    else:
        c_bits, fc, kind_c = to_bits(c, c_format, "c", "c_format")
    acc = fc if fc in ("fp32", "fp16") else "fp32"  # the preset's D format
    fd = _format_name(out_format, "out_format") if out_format is not None else fc
    pf = _format_name(partial_format, "partial_format") if partial_format is not None else "fp32"
    member = _member(arch, kind, acc, split_k, slice, order, pf, c_entry)
    ti = tj = -1
    if trace is not None:
        ti, tj = _pair(trace)
    _options(ROUNDING_DEFAULT, "after", "ieee", False, False, False, None, threads)
    d_bits, blocks, partials, info = _core.gemm_member(a_bits, b_bits, c_bits, fin, fc, fd, member, ti, tj,
                                                       int(threads))
    d = from_bits(d_bits, fd, kind_c)
    if trace is None:
        return d
    return d, {"member": info, "element": (ti, tj), "blocks": blocks, "partials": partials}


def _load(x, arg: str):
    """A .npy path (str or os.PathLike) -> its array; anything else unchanged."""
    if isinstance(x, (str, os.PathLike)):
        try:
            return np.load(x, allow_pickle=False)
        except (OSError, ValueError) as err:
            raise ValueError(f"argument '{arg}': cannot read {str(x)[:80]!r} as .npy: {str(err)[:80]}") from err
    return x


class GemmExplanation:
    """Result of explain_gemm(): members (how many the family had), sample (elements every
    member was compared on), match (the first member reproducing every element bit for bit,
    as a dict with 'name', or None), matches (all such members), ranking (members with their
    mismatch counts, fewest first), first_unexplained ((i, j) of the first sampled element no
    member reproduces, or None), mismatch (with no match: the best member's first mismatching
    element, its expected and computed bits, the slices' partials and the block trace).
    str() is the report; as_dict() is JSON-ready.

    >>> a = bf16emu.convert(np.float32([[1.0, 1.5 * 2.0**-24]]), to="bf16")
    >>> b = bf16emu.convert(np.float32([[1.0], [1.0]]), to="bf16")
    >>> e = bf16emu.explain_gemm(a, b, np.float32([[1.0 + 2.0**-23]]), a_format="bf16", max_split=1)
    >>> e.match["engine"], [m["engine"] for m in e.matches]  # rounded up: IEEE; tensor cores truncate to 1
    ('ieee-fma', ['ieee-fma', 'ieee-mul-add'])
    """

    def __init__(self, raw: dict, shape, top: int, mismatch):
        self.members = int(raw["members"])
        self.sample = int(raw["sample"])
        self.shape = tuple(shape)
        rank = raw["ranking"]
        self.matches = [m for m in rank if m["mismatches"] == 0 and m["all"]]
        self.match = self.matches[0] if self.matches else None
        self.ranking = rank[:top] if top else list(rank)
        fu = int(raw["first_unexplained"])
        self.first_unexplained = None if fu < 0 else self._index(fu)
        self.mismatch = mismatch

    def _index(self, flat: int):
        return (flat // self.shape[1], flat % self.shape[1])

    def as_dict(self) -> dict:
        return {"members": self.members, "sample": self.sample, "match": self.match, "matches": self.matches,
                "ranking": self.ranking, "first_unexplained": self.first_unexplained, "mismatch": self.mismatch}

    def __str__(self) -> str:
        lines = [f"searched {self.members} members, each on {self.sample} of "
                 f"{self.shape[0] * self.shape[1]} elements"]
        if self.match:
            lines.append(f"match: {self.match['name']}")
            if len(self.match.get("same_arithmetic", [])) > 1:
                lines.append("  same arithmetic: " + "; ".join(self.match["same_arithmetic"][1:]))
            if len(self.matches) > 1:
                lines.append(f"  {len(self.matches) - 1} other member(s) also reproduce every element:")
                lines += [f"    {m['name']}" for m in self.matches[1:6]]
        else:
            lines.append("no member reproduces the result")
            if self.first_unexplained is not None:
                lines.append(f"first element no member reproduces: {self.first_unexplained}")
        lines.append("ranking (mismatching elements / compared):")
        lines += [f"  {m['mismatches']:>6} / {m['checked']:<6} {m['name']}" for m in self.ranking]
        if self.mismatch:
            mm = self.mismatch
            lines.append(f"best member's first mismatch at {mm['element']}: result {mm['result']} "
                         f"({mm['result_bits']:#x}), member {mm['member_value']} ({mm['member_bits']:#x})")
            lines.append("  partials: " + ", ".join(f"{p:#010x}" for p in mm["partials"]))
            for blk in mm["blocks"]:
                lines.append(f"  slice {blk['slice']} block {blk['block']} k0 {blk['k0']}: c {blk['c_bits']:#x} -> "
                             f"d {blk['d_bits']:#x}, max_exp {blk['max_exp']}, lsb 2^{blk['lsb_exp']}, "
                             f"lost {sum(t['lost'] for t in blk['terms']):.6g}, trunc_err {blk['trunc_err']:.6g}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (f"GemmExplanation(members={self.members}, match={self.match['name'] if self.match else None!r}, "
                f"first_unexplained={self.first_unexplained})")


def explain_gemm(a, b, result, *, c=None, a_format: str | None = None, c_format: str | None = None,
                 result_format: str | None = None, arch: str | None = None, max_split: int = 4,
                 presets: bool = True, ieee: bool = True, c_at_end: bool = True, sample: int = 4096, top: int = 10,
                 threads: int = 0) -> GemmExplanation:
    """Which way of computing D = A B (+ C) reproduces `result` bit for bit? Searches the GEMM
    family (docs/explain-gemm.md): tensor-core presets taking A's format (arch= keeps one
    architecture's) and plain IEEE fp32 (ieee-fma, ieee-mul-add); split-k 1 .. max_split;
    partial sums added sequentially or pairwise, in fp32 or D's format; C first or at the end.
    a (M x K), b (K x N), result (M x N) and c (M x N) are arrays, tensors or .npy paths; bit
    patterns (uint) need a_format=, c_format=, result_format=. Every member is compared on up
    to `sample` elements, those that reproduce all of them on every element. Returns a
    GemmExplanation: .match names the first member (in family order) reproducing every element;
    with none, .mismatch holds the best member's first mismatching element with its trace.

    >>> rng = np.random.default_rng(0)
    >>> a = bf16emu.convert(rng.standard_normal((8, 64)).astype(np.float32), to="bf16")
    >>> b = bf16emu.convert(rng.standard_normal((64, 8)).astype(np.float32), to="bf16")
    >>> d = bf16emu.gemm(a, b, a_format="bf16", arch="sm90", split_k=2)
    >>> e = bf16emu.explain_gemm(a, b, d, a_format="bf16")
    >>> e.match["arch"], e.match["split_k"], e.match["order"], e.match["c_entry"]
    ('sm90', 2, 'sequential', 'first')
    """
    a, b, result = _load(a, "a"), _load(b, "b"), _load(result, "result")
    c = _load(c, "c") if c is not None else None
    arch = None if arch is None else _name(arch, "arch")
    opts = {"max_split": _count(max_split, "max_split", 1), "presets": _bool(presets, "presets"),
            "ieee": _bool(ieee, "ieee"), "c_at_end": _bool(c_at_end, "c_at_end"), "arch": arch or "",
            "sample": _count(sample, "sample", 1)}
    top = _count(top, "top", 0)
    _threads(threads)
    a_bits, fin, _ = to_bits(a, a_format, "a", "a_format")
    b_bits, fb, _ = to_bits(b, a_format or fin, "b", "a_format")
    if fb != fin:
        raise TypeError(f"argument 'b' holds {fb} but argument 'a' holds {fin}")
    r_bits, fd, _ = to_bits(result, result_format, "result", "result_format")
    c_bits, fc = None, "fp32"
    if c is not None:
        c_bits, fc, _ = to_bits(c, c_format, "c", "c_format")
    _options(ROUNDING_DEFAULT, "after", "ieee", False, False, False, None, threads)
    raw = _core.explain_gemm(a_bits, b_bits, c_bits, r_bits, fin, fc, fd, opts, int(threads))
    shape = r_bits.shape
    mismatch = None
    rank = raw["ranking"]
    if rank and not (rank[0]["mismatches"] == 0 and rank[0]["all"]):
        best = rank[0]
        flat = int(best["first_mismatch"])
        i, j = flat // shape[1], flat % shape[1]
        member = {k: best[k] for k in ("engine", "split_k", "slice", "order", "partial_format", "c_entry",
                                       "accumulator")}
        member["arch"], member["kind"] = best.get("arch", ""), best.get("kind", "")
        d_bits, blocks, partials, _ = _core.gemm_member(a_bits[i:i + 1], b_bits, None if c_bits is None else
                                                        c_bits[i:i + 1], fin, fc, fd, member, 0, j, 1)
        got, want = int(d_bits[0, j]), int(r_bits[i, j])
        mismatch = {"member": best["name"], "element": (i, j), "result_bits": want,
                    "result": _core.value(fd, want), "member_bits": got, "member_value": _core.value(fd, got),
                    "partials": [int(p) for p in partials], "blocks": blocks}
    return GemmExplanation(raw, shape, top, mismatch)


def mma(a, b, c=None, *, arch: str = "sm80", kind: str | None = None, a_format: str | None = None,
        c_format: str | None = None, trace=None, b_format: str | None = None, scale_a=None, scale_b=None,
        scale_format: str | None = None, scale_vec: int | None = None, zero_exp: str | None = None):
    """One tensor-core instruction D = A B + C on the preset's exact m x n x k tile (e.g.
    16x8x16 for sm80 mma.sync bf16; 16x8x64 for sm120 kind::mxf4nvf4; 32x32x8 for AMD
    v_mfma_f32_32x32x8_bf16): the shapes must match the instruction. See gemm().

    >>> a = bf16emu.convert(np.ones((16, 16), np.float32), to="bf16")
    >>> b = bf16emu.convert(np.ones((16, 8), np.float32), to="bf16")
    >>> bf16emu.mma(a, b, a_format="bf16", arch="sm80")[0, 0]
    16.0
    """
    return gemm(a, b, c, arch=arch, kind=kind, a_format=a_format, c_format=c_format, trace=trace, threads=1,
                b_format=b_format, scale_a=scale_a, scale_b=scale_b, scale_format=scale_format, scale_vec=scale_vec,
                zero_exp=zero_exp, _single=True)
