"""Format facts, read from the C++ core (issue 42 item 3; issue 44).

Every fact of a format -- its storage width, pattern width, bias, emin/emax, max, NaN and Inf
encodings -- comes from `_core.format_info(name)`, i.e. from the core's description of the format
(the format traits of include/bf16emu/core/format.hpp, or a format named at run time: e4m3fnuz,
p3109:p4, fp:e=5,m=4,bias=7,enc=ieee ...; docs/formats.md has the grammar). Python keeps no table
of its own: `_WIDTH`, `_PATTERN_WIDTH` and `_NAN_ABOVE` below are views of those facts with the
shape the rest of the package reads (name -> number).
"""
from __future__ import annotations

import functools
from collections.abc import Mapping

import numpy as np

from . import _core

__all__ = ["finfo", "FormatInfo"]

# The formats with a compile-time trait, in the order of core/format.hpp's format_id (what iterating
# the views below lists; any other name the C++ side accepts is looked up on demand).
_COMPILE_TIME = ("fp64", "fp32", "bf16", "fp16", "tf32", "e4m3", "e5m2", "e2m3", "e3m2", "e2m1")


@functools.lru_cache(maxsize=None)
def _info(name: str) -> dict:
    """The C++ facts of a format name, alias or field list (ValueError for an unknown one)."""
    return dict(_core.format_info(name))


class _FactView(Mapping):
    """name -> one fact of that format, read from the C++ facts; `only` leaves formats out."""

    def __init__(self, fact, only=None):
        self._fact, self._only = fact, only

    def __getitem__(self, name):
        if not isinstance(name, str):
            raise KeyError(name)
        try:
            info = _info(name)
        except ValueError:
            raise KeyError(name) from None
        if self._only is not None and not self._only(info):
            raise KeyError(name)
        return self._fact(info)

    def __iter__(self):
        return (n for n in _COMPILE_TIME if n in self)

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __contains__(self, name) -> bool:
        try:
            self[name]
        except KeyError:
            return False
        return True


# Storage width in bits of each format's bit patterns (fp6/fp4 take one byte each, tf32 four).
_WIDTH = _FactView(lambda i: i["storage_bits"])
# The pattern width, only where it is narrower than its storage (tf32: 19, e2m3: 6, e2m1: 4, ...).
_PATTERN_WIDTH = _FactView(lambda i: i["bits"], only=lambda i: i["bits"] < i["storage_bits"])
# Sign-magnitude formats whose NaNs are the magnitudes above one pattern (ieee: +Inf; fn: the
# largest finite; finite: every pattern is a number): that pattern. The formats whose one NaN is
# the sign bit alone (fnuz, p3109) and e8m0 are not in it.
_NAN_ABOVE = _FactView(lambda i: i["inf_bits"] if i["has_inf"] else (i["max_bits"] if i["has_nan"] else
                                                                     (1 << (i["bits"] - 1)) - 1),
                       only=lambda i: i["encoding"] in ("ieee", "fn", "finite"))


class FormatInfo:
    """The facts of one format, from its definition (as numpy.finfo / torch.finfo / ml_dtypes
    give them): name, bits (the pattern width), storage_bits, exponent_bits, mantissa_bits
    (stored fraction bits), precision (mantissa_bits + 1), bias, emin, emax, max, min (= -max;
    the smallest number for the unsigned e8m0), tiny and smallest_normal (2^emin),
    smallest_subnormal (= tiny where there are none), eps (2^-mantissa_bits), has_inf, has_nan,
    and for formats of at most 8 bits `values` (the value of every code 0 .. 2^bits - 1 as
    float64, NaN where the code is NaN) and `grid` (the distinct finite values, ascending).

    Issue 44 adds: encoding (ieee, fn, finite, fnuz, p3109, e8m0), fields (the format as
    "fp:e=..,m=..,bias=..,enc=.."), has_neg_zero, signed, subnormals, saturates, max_bits,
    inf_bits and nan_bits (the default NaN; None where there is none), nan_count, compile_time
    (a C++ trait) and bulk_kernel (src/bulk converts it from/to fp32 with SIMD; the others run
    one scalar call per element, ~10-20 ns).

    Every fact comes from the C++ core (`_core.format_info`), the same as `bf16emu finfo --json`.

    >>> f = bf16emu.finfo("e4m3")
    >>> f.max, f.tiny, f.smallest_subnormal, f.eps, f.has_inf, f.has_nan
    (448.0, 0.015625, 0.001953125, 0.125, False, True)
    >>> bf16emu.finfo("p3109:p4").max, bf16emu.finfo("e4m3fnuz").nan_bits
    (224.0, 128)
    """

    def __init__(self, name: str):
        i = _info(name)
        self.name = i["name"]
        self.fields = i["fields"]
        self.encoding = i["encoding"]
        self.bits = i["bits"]
        self.storage_bits = i["storage_bits"]
        self.exponent_bits = i["exponent_bits"]
        self.mantissa_bits = i["mantissa_bits"]
        self.precision = i["precision"]
        self.bias = i["bias"]
        self.emin = i["emin"]
        self.emax = i["emax"]
        self.max = float(i["max"])
        self.signed = i["signed"]
        self.min = -self.max if self.signed else float(i["min_normal"])
        self.tiny = self.smallest_normal = float(i["min_normal"])
        self.smallest_subnormal = float(i["min_subnormal"])
        self.eps = float(i["eps"])
        self.has_inf = i["has_inf"]
        self.has_nan = i["has_nan"]
        self.has_neg_zero = i["has_neg_zero"]
        self.subnormals = i["subnormals"]
        self.saturates = i["saturates"]
        self.max_bits = i["max_bits"]
        self.inf_bits = i["inf_bits"]
        self.nan_bits = i["nan_bits"]
        self.nan_count = i["nan_count"]
        self.compile_time = i["compile_time"]
        self.bulk_kernel = i["bulk_kernel"]
        self.values = self.grid = None
        if self.bits <= 8:
            from . import convert  # the package's convert (run-time formats included)
            codes = np.arange(1 << self.bits, dtype=np.uint8)
            self.values = np.asarray(convert(codes, "fp64", format=self.name), dtype=np.float64)
            finite = self.values[np.isfinite(self.values)]
            self.grid = np.unique(finite) + 0.0  # one zero, +0

    def __repr__(self) -> str:
        return (f"FormatInfo({self.name}: bits={self.bits}, exponent_bits={self.exponent_bits}, "
                f"mantissa_bits={self.mantissa_bits}, bias={self.bias}, max={self.max!r}, tiny={self.tiny!r}, "
                f"smallest_subnormal={self.smallest_subnormal!r}, eps={self.eps!r}, has_inf={self.has_inf}, "
                f"has_nan={self.has_nan})")


def finfo(fmt) -> FormatInfo:
    """The facts of format `fmt`: a name ("bf16", "e4m3", "float8_e4m3fn", "fp4", "e4m3fnuz",
    "e5m2fnuz", "e4m3b11fnuz", "e3m4", "e4m3ieee", "e8m0", "p3109:p1" .. "p3109:p7") or a field
    list ("fp:e=5,m=4,bias=7,enc=ieee"; docs/formats.md): see FormatInfo.

    >>> bf16emu.finfo("bf16").max
    3.3895313892515355e+38
    >>> bf16emu.finfo("e2m1").grid.tolist()
    [-6.0, -4.0, -3.0, -2.0, -1.5, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]
    """
    if not isinstance(fmt, str):
        raise TypeError(f"argument 'fmt' must be a format name (str), got {type(fmt).__name__}")
    return FormatInfo(fmt)

