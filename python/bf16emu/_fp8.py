"""FP8 operands with a per-tensor scale rule for ProductMode (issue 43 item 1, dtype="e4m3"/"e5m2").

For a product a (M x K) @ b (K x N) under dtype f in (e4m3, e5m2):
- each operand gets its own scale s = 2**e, e = floor(log2(fmt_max / amax)) computed in float64,
  amax = max |x| of that 2-d operand (fmt_max: 448 for e4m3, 57344 for e5m2). A power of two,
  so the scaling itself is exact and amax * s <= fmt_max (the largest power of two that does not
  push amax past the format's max). amax == 0 (or not finite): s = 1;
- x * s (FP32, exact) is rounded to f by bf16emu.convert (round to nearest even, satfinite);
- the product runs on the preset's fp8 path: bf16emu.gemm(..., a_format=f) on sm89, sm90 and
  sm120 (their default instruction kind), and on sm100 with kind="f8f6f4" (tcgen05 has no plain
  e4m3/e5m2 kind in the model); FP32 accumulation and output;
- the result D is multiplied by 1 / (s_a * s_b) (that factor computed in float64, rounded to FP32,
  exact for the powers of two in FP32's range) in FP32.
Presets with no fp8 path (sm70, sm75, sm80, sm86) are refused naming argument 'gpu'.
"""

from __future__ import annotations

import math

import numpy as np

import bf16emu as _bf

FORMATS = {"e4m3": 448.0, "e5m2": 57344.0}
PRESETS = {"sm89": None, "sm90": None, "sm100": "f8f6f4", "sm120": None}

__all__ = ["FORMATS", "PRESETS", "check", "scale", "product"]


def check(gpu, dtype):
    if gpu not in PRESETS:
        raise ValueError(f"argument 'gpu': no fp8 ({dtype}) tensor-core path on preset '{gpu:.80}'; "
                         f"these take dtype='{dtype}': {', '.join(PRESETS)}")


def scale(x: np.ndarray, dtype: str) -> float:
    """The power-of-two scale that maps x's amax to at most the format's max."""
    amax = float(np.max(np.abs(x))) if x.size else 0.0
    if amax == 0.0 or not math.isfinite(amax):
        return 1.0
    q = FORMATS[dtype] / amax
    e = math.frexp(q)[1] - 1  # 2**e <= q < 2**(e+1)
    return math.ldexp(1.0, e)


def product(an: np.ndarray, bn: np.ndarray, gpu: str, dtype: str) -> np.ndarray:
    """an (M x K) @ bn (K x N), FP32 NumPy arrays: FP32 NumPy result."""
    sa, sb = scale(an, dtype), scale(bn, dtype)
    a8 = np.asarray(_bf.convert((an * np.float32(sa)).astype(np.float32), to=dtype))
    b8 = np.asarray(_bf.convert((bn * np.float32(sb)).astype(np.float32), to=dtype))
    kind = PRESETS[gpu]
    kw = {"kind": kind, "b_format": dtype} if kind else {}
    d = np.asarray(_bf.gemm(a8, b8, arch=gpu, a_format=dtype, threads=0, **kw), dtype=np.float32)
    return d * np.float32(1.0 / (sa * sb))
