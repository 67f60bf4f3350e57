"""Format facts: finfo(fmt) and FormatInfo."""

from __future__ import annotations

import math

import numpy as np

from ._args import _format_name
from ._arith import convert
from ._bits import _WIDTH


# name -> (exponent bits, mantissa (fraction) bits, encoding of the top exponent): "ieee" (inf and
# NaN), "fn" (no inf; only S.1111.111 is NaN: e4m3), "finite" (no inf, no NaN: the MX fp6/fp4).
_FORMAT_FIELDS = {"fp64": (11, 52, "ieee"), "fp32": (8, 23, "ieee"), "tf32": (8, 10, "ieee"),
                  "bf16": (8, 7, "ieee"), "fp16": (5, 10, "ieee"), "e4m3": (4, 3, "fn"), "e5m2": (5, 2, "ieee"),
                  "e2m3": (2, 3, "finite"), "e3m2": (3, 2, "finite"), "e2m1": (2, 1, "finite")}


class FormatInfo:
    """The facts of one format, from its definition (as numpy.finfo / torch.finfo / ml_dtypes
    give them): name, bits (the pattern width), storage_bits, exponent_bits, mantissa_bits
    (stored fraction bits), precision (mantissa_bits + 1), bias, emin, emax, max, min (= -max),
    tiny and smallest_normal (2^emin), smallest_subnormal, eps (2^-mantissa_bits), has_inf,
    has_nan, and for formats of at most 8 bits `values` (the value of every code 0 .. 2^bits - 1
    as float64, NaN where the code is NaN) and `grid` (the distinct finite values, ascending).

    >>> f = bf16emu.finfo("e4m3")
    >>> f.max, f.tiny, f.smallest_subnormal, f.eps, f.has_inf, f.has_nan
    (448.0, 0.015625, 0.001953125, 0.125, False, True)
    """

    def __init__(self, name: str):
        e, m, enc = _FORMAT_FIELDS[name]
        self.name = name
        self.bits = 1 + e + m
        self.storage_bits = _WIDTH[name]
        self.exponent_bits = e
        self.mantissa_bits = m
        self.precision = m + 1
        self.bias = (1 << (e - 1)) - 1
        self.has_inf = enc == "ieee"
        self.has_nan = enc != "finite"
        # The top exponent field holds inf/NaN in "ieee" formats only.
        self.emax = ((1 << e) - 2 if enc == "ieee" else (1 << e) - 1) - self.bias
        self.emin = 1 - self.bias
        top_fraction = (1 << m) - (2 if enc == "fn" else 1)  # e4m3: S.1111.111 is NaN
        self.max = math.ldexp(1.0 + top_fraction / (1 << m), self.emax)
        self.min = -self.max
        self.tiny = self.smallest_normal = math.ldexp(1.0, self.emin)
        self.smallest_subnormal = math.ldexp(1.0, self.emin - m)
        self.eps = math.ldexp(1.0, -m)
        self.values = self.grid = None
        if self.bits <= 8:
            codes = np.arange(1 << self.bits, dtype=np.uint8)
            self.values = convert(codes, "fp64", format=name)
            finite = self.values[np.isfinite(self.values)]
            self.grid = np.unique(finite) + 0.0  # one zero, +0

    def __repr__(self) -> str:
        return (f"FormatInfo({self.name}: bits={self.bits}, exponent_bits={self.exponent_bits}, "
                f"mantissa_bits={self.mantissa_bits}, bias={self.bias}, max={self.max!r}, tiny={self.tiny!r}, "
                f"smallest_subnormal={self.smallest_subnormal!r}, eps={self.eps!r}, has_inf={self.has_inf}, "
                f"has_nan={self.has_nan})")


def finfo(fmt) -> FormatInfo:
    """The facts of format `fmt` (a name such as "bf16", "e4m3", "float8_e4m3fn", "fp4"): see
    FormatInfo.

    >>> bf16emu.finfo("bf16").max
    3.3895313892515355e+38
    >>> bf16emu.finfo("e2m1").grid.tolist()
    [-6.0, -4.0, -3.0, -2.0, -1.5, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]
    """
    return FormatInfo(_format_name(fmt, "fmt"))
