"""Cross-checks: compare(actual, expected), ulp distances and explain(index)."""

from __future__ import annotations

import numbers

import numpy as np

from . import _core
from ._args import ROUNDING_DEFAULT, _name, _options
from ._arith import _ARITY, trace
from ._formats import _NAN_ABOVE
from ._bits import _PATTERN_WIDTH, _WIDTH, to_bits


def ordered(bits: np.ndarray, fmt: str):
    """Bit patterns -> (ordered integers, NaN mask): consecutive representable values are
    consecutive integers (+0 and -0 both map to 0), so |a - b| is the distance in ulps."""
    width = _PATTERN_WIDTH.get(fmt, _WIDTH[fmt])  # tf32: a 19-bit pattern in 32-bit storage
    u = bits.astype(np.uint64)
    sign_bit = np.uint64(1) << np.uint64(width - 1)
    mag = (u & (sign_bit - np.uint64(1))).astype(np.int64)
    neg = (u & sign_bit) != 0
    return np.where(neg, -mag, mag), mag > _NAN_ABOVE[fmt]


class Comparison:
    """Result of compare(): count, mismatches (bitwise), ulp_histogram {bucket: count} (buckets
    0, 1, 2, 4, 8, ...: key k counts distances in (k/2, k]; 'nan' counts elements where exactly
    one side is NaN), worst (the element farthest apart),
    first_mismatches (index tuples, in C order), and explain(index).

    >>> c = bf16emu.compare(np.uint16([0x3F80, 0x4000]), np.uint16([0x3F80, 0x4001]), format="bf16")
    >>> c.mismatches, c.ulp_histogram, c.first_mismatches
    (1, {0: 1, 1: 1}, [(1,)])
    """

    def __init__(self, fmt, shape, a_bits, e_bits, first, op, inputs, opts):
        self.format = fmt
        self.shape = tuple(shape)
        self._a, self._e = a_bits, e_bits
        self._op, self._inputs, self._opts = op, inputs, opts
        oa, na = ordered(a_bits.reshape(-1), fmt)
        oe, ne = ordered(e_bits.reshape(-1), fmt)
        differ = a_bits.reshape(-1) != e_bits.reshape(-1)
        one_nan = na != ne
        dist = np.where(na | ne, 0, np.abs(oa - oe))
        self.count = int(a_bits.size)
        self.mismatches = int(np.count_nonzero(differ))
        self.nan_mismatches = int(np.count_nonzero(one_nan))
        # Buckets: 0, 1, 2, then powers of two: key k counts distances in (k/2, k].
        d = dist[~one_nan]
        bucket = np.where(d <= 1, d, np.left_shift(1, np.ceil(np.log2(np.maximum(d, 1))).astype(np.int64)))
        keys, counts = np.unique(bucket, return_counts=True)
        self.ulp_histogram = {int(k): int(c) for k, c in zip(keys, counts)}
        if self.nan_mismatches:
            self.ulp_histogram["nan"] = self.nan_mismatches
        idx = np.flatnonzero(differ)[:first]
        self.first_mismatches = [self._index(int(i)) for i in idx]
        if self.mismatches == 0:
            self.worst = None
        else:
            score = np.where(one_nan, np.iinfo(np.int64).max, dist).astype(np.int64)
            score[~differ] = -1
            w = int(np.argmax(score))
            self.worst = self._element(w)

    def _index(self, flat: int):
        return tuple(int(v) for v in np.unravel_index(flat, self.shape)) if self.shape else ()

    def _element(self, flat: int) -> dict:
        a = int(self._a.reshape(-1)[flat])
        e = int(self._e.reshape(-1)[flat])
        oa, na = ordered(np.array([a], np.uint64), self.format)
        oe, ne = ordered(np.array([e], np.uint64), self.format)
        ulps = None if bool(na[0]) != bool(ne[0]) else (0 if na[0] else int(abs(int(oa[0]) - int(oe[0]))))
        return {"index": self._index(flat), "actual_bits": a, "expected_bits": e,
                "actual": _core.value(self.format, a), "expected": _core.value(self.format, e), "ulps": ulps}

    def explain(self, index) -> dict:
        """The element at `index` (a tuple, or a flat int): both values and their ulp distance;
        when compare() was given op= and inputs=, also bf16emu.trace() of that element's
        operation (the 'trace' key): guard, round, sticky, decision and exact error.

        >>> c = bf16emu.compare(np.uint16([0x4000]), np.uint16([0x4001]), format="bf16")
        >>> c.explain(0)["ulps"], c.explain(0)["expected"]
        (1, 2.015625)
    """
        if isinstance(index, numbers.Integral) and not isinstance(index, bool):
            flat = int(index)
            if not 0 <= flat < self.count:
                raise ValueError(f"argument 'index' = {flat} is outside [0, {self.count})")
        else:
            try:
                flat = int(np.ravel_multi_index(tuple(int(i) for i in index), self.shape))
            except (TypeError, ValueError) as err:
                raise ValueError(f"argument 'index' = {str(index)[:80]} does not index shape {self.shape}") from err
        d = self._element(flat)
        if self._op is not None:
            ops = [np.asarray(x).reshape(-1)[flat] for x in self._inputs]
            d["trace"] = trace(self._op, *[int(v) for v in ops], format=self._inputs_format, **self._opts)
        return d

    def plot(self, path=None, **kwargs):
        """The ulp histogram and the error map (bf16emu.plot.comparison; needs matplotlib):
        returns the matplotlib Figure, and with path= writes it as a PNG. c.plot("c.png").
        (Its example is bf16emu.plot.comparison's, run by tests/python/test_plots.py, which
        skips without matplotlib.)
        """
        from .plot import comparison
        return comparison(self, path, **kwargs)

    def as_dict(self) -> dict:
        return {"format": self.format, "count": self.count, "mismatches": self.mismatches,
                "nan_mismatches": self.nan_mismatches, "ulp_histogram": dict(self.ulp_histogram),
                "worst": self.worst, "first_mismatches": list(self.first_mismatches)}

    def __repr__(self) -> str:
        return (f"Comparison({self.format}, count={self.count}, mismatches={self.mismatches}, "
                f"ulp_histogram={self.ulp_histogram}, worst={self.worst})")


def compare(actual, expected, *, format: str | None = None, first: int = 10, op: str | None = None,
            inputs=(), input_format: str | None = None, rounding=ROUNDING_DEFAULT, tininess="after", nan="ieee",
            ftz=False, daz=False, saturate=False):
    """Compare two arrays/tensors of one format element by element (bit patterns). With op=
    and inputs= (the operands that produced `expected` through that bf16emu operation),
    explain(index) adds the trace of the element's rounding.

    >>> a, b = np.uint16([0x3F80]), np.uint16([0x3B80])  # 1 + 2^-8 in bf16: a tie
    >>> mine = np.uint16([0x3F81])                      # a kernel that rounded it up
    >>> c = bf16emu.compare(mine, bf16emu.add(a, b, format="bf16"), format="bf16", op="add", inputs=(a, b))
    >>> c.mismatches, c.explain(0)["trace"]["decision"]
    (1, 'tie_down')
    """
    if isinstance(inputs, (str, bytes)) or not isinstance(inputs, (tuple, list)):
        raise TypeError(f"argument 'inputs' must be a tuple or list of arrays, got {type(inputs).__name__}")
    a_bits, fa, _ = to_bits(actual, format, "actual")
    e_bits, fe, _ = to_bits(expected, format, "expected")
    if fa != fe:
        raise TypeError(f"argument 'expected' holds {fe} but argument 'actual' holds {fa}")
    if a_bits.shape != e_bits.shape:
        raise ValueError(f"argument 'expected': shape {tuple(e_bits.shape)} does not match argument 'actual' "
                         f"{tuple(a_bits.shape)}")
    if isinstance(first, bool) or not isinstance(first, numbers.Integral) or first < 0:
        raise ValueError(f"argument 'first' must be a count >= 0, got {first!r:.80}")
    ins, in_fmt = [], None
    if op is not None:
        op_name, op = op, _name(op, "op")
        if op not in _ARITY or op == "convert":
            raise ValueError(f"argument 'op': unknown operation {str(op_name)[:80]!r} (add, sub, mul, fma, div, sqrt)")
        if len(inputs) != _ARITY[op]:
            raise ValueError(f"argument 'inputs': {op} takes {_ARITY[op]} operand(s), got {len(inputs)}")
        for i, x in enumerate(inputs):
            b, f, _ = to_bits(x, input_format or format, f"inputs[{i}]",
                              "input_format" if input_format is not None else "format")
            if b.shape != a_bits.shape:
                raise ValueError(f"argument 'inputs[{i}]': shape {tuple(b.shape)} does not match {tuple(a_bits.shape)}")
            ins.append(b)
            in_fmt = f
    checked = _options(rounding, tininess, nan, ftz, daz, saturate, None, 0)  # names checked now, not in explain()
    opts = {k: checked[k] for k in ("rounding", "tininess", "nan", "ftz", "daz", "saturate")}
    c = Comparison(fa, a_bits.shape, a_bits, e_bits, int(first), op, ins, opts)
    c._inputs_format = in_fmt
    if op is not None and in_fmt != fa:
        c._opts = dict(opts, to=fa)
    return c


# ---------------------------------------------------------------------------
# Tensor cores.
