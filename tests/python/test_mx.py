"""The OCP MX formats in the Python package: fp6 e2m3/e3m2 and fp4 e2m1 bit patterns (one per
uint8) through convert/arith/compare, and quantize_mx / dequantize_mx. Expected values come from
an independent oracle written here with exact rationals (fractions.Fraction): the formats are
decoded from their field widths (OCP MX v1.0 section 5.3: no Inf/NaN, bias 1, 3 and 1) and
rounding picks the nearest grid value by exact comparison, never from bf16emu."""

from fractions import Fraction
import math

import numpy as np
import pytest

import bf16emu
from bf16emu import Flags

# (exponent bits, fraction bits, bias)
FIELDS = {"e2m1": (2, 1, 1), "e2m3": (2, 3, 1), "e3m2": (3, 2, 3), "e4m3": (4, 3, 7), "e5m2": (5, 2, 15)}
EMAX = {"e2m1": 2, "e2m3": 2, "e3m2": 4, "e4m3": 8, "e5m2": 15}


def decode(fmt, bits):
    e_bits, m_bits, bias = FIELDS[fmt]
    sign = -1 if bits >> (e_bits + m_bits) & 1 else 1
    e = bits >> m_bits & ((1 << e_bits) - 1)
    m = bits & ((1 << m_bits) - 1)
    if e == 0:
        return sign * Fraction(m, 1 << m_bits) * Fraction(2) ** (1 - bias)
    return sign * (1 + Fraction(m, 1 << m_bits)) * Fraction(2) ** (e - bias)


def finite_codes(fmt):
    """(value, code) for every finite non-negative encoding of fmt."""
    e_bits, m_bits, _ = FIELDS[fmt]
    n = 1 << (e_bits + m_bits)
    codes = []
    for c in range(n):
        if fmt == "e4m3" and c == 0x7F:
            continue  # e4m3's NaN
        if fmt == "e5m2" and c >= 0x7C:
            continue  # e5m2's Inf/NaN
        codes.append((decode(fmt, c), c))
    return codes


def round_rne_saturate(fmt, v):
    """v (a Fraction) rounded to nearest even into fmt, magnitudes above max clamped to max."""
    e_bits, m_bits, _ = FIELDS[fmt]
    sign_bit = 1 << (e_bits + m_bits)
    mag = abs(v)
    best = None
    for value, code in finite_codes(fmt):
        d = abs(value - mag)
        if best is None or d < best[0] or (d == best[0] and code % 2 == 0):
            best = (d, code)
    code = best[1]
    return code | (sign_bit if v < 0 else 0)


def test_mx_convert_grid_and_ties():
    # e2m1 grid: 0, 0.5, 1, 1.5, 2, 3, 4, 6. 1.25 is a tie between 1 (0x2) and 1.5 (0x3): even 0x2;
    # 2.5 ties 2 (0x4) and 3 (0x5): 0x4; 5 ties 4 (0x6) and 6 (0x7): 0x6; 0.25 ties 0 and 0.5: +0.
    x = np.array([1.25, 2.5, 5.0, 0.25, -6.0, 0.5], dtype=np.float32)
    y, _, flags = bf16emu.convert(x, to="e2m1", return_flags=True)
    assert y.dtype == np.uint8
    assert [int(v) for v in y] == [0x2, 0x4, 0x6, 0x0, 0xF, 0x1]
    assert flags & Flags.INEXACT


def test_mx_convert_matches_oracle_every_format():
    rng = np.random.default_rng(7)
    for fmt in ("e2m1", "e2m3", "e3m2"):
        top = float(decode(fmt, max(c for _, c in finite_codes(fmt))))
        x = (rng.uniform(-1.2 * top, 1.2 * top, 4000)).astype(np.float32)
        y = bf16emu.convert(x, to=fmt)
        want = [round_rne_saturate(fmt, Fraction(float(v))) for v in x]
        assert [int(v) for v in y] == want, fmt


def test_mx_roundtrip_to_fp32_every_code():
    for fmt in ("e2m1", "e2m3", "e3m2"):
        codes = np.array([c for _, c in finite_codes(fmt)] + [c | (1 << (sum(FIELDS[fmt][:2])))
                                                              for _, c in finite_codes(fmt)], dtype=np.uint8)
        y, _, flags = bf16emu.convert(codes, to="fp32", format=fmt, return_flags=True)
        assert flags == Flags.NONE
        assert [Fraction(float(v)) for v in y] == [decode(fmt, int(c)) for c in codes]


def test_mx_arith_and_compare():
    a = np.array([0x2, 0x3], dtype=np.uint8)  # 1, 1.5 in e2m1
    s, _, flags = bf16emu.add(a, a, format="e2m1", return_flags=True)  # 2 (exact), 3 (exact)
    assert [int(v) for v in s] == [0x4, 0x5] and flags == Flags.NONE
    c = bf16emu.compare(np.array([0x4, 0x5], dtype=np.uint8), np.array([0x4, 0x6], dtype=np.uint8), format="e2m1")
    assert c.mismatches == 1


def test_mx_bits_above_the_format_are_rejected():
    with pytest.raises(ValueError, match=r"element 1 = 0x10 has bits above the 4-bit format e2m1"):
        bf16emu.convert(np.array([0x1, 0x10], dtype=np.uint8), to="fp32", format="e2m1")
    with pytest.raises(ValueError, match=r"6-bit format e3m2"):
        bf16emu.add(np.array([0x40], dtype=np.uint8), np.array([0x1], dtype=np.uint8), format="e3m2")


def quantize_oracle(block_values, fmt):
    """OCP MX v1.0 section 6.3: X = 2^(floor(log2 max|v|) - emax), clamped to UE8M0's range;
    P = v / X rounded (here nearest even) and saturated. NaN/Inf: scale NaN, elements +0."""
    if any(math.isnan(v) or math.isinf(v) for v in block_values):
        return 0xFF, [0] * len(block_values)
    vals = [Fraction(v) for v in block_values]
    m = max(abs(v) for v in vals)
    lead = -126 if m == 0 else math.floor(math.log2(m))
    # exact floor(log2 m) (math.log2 of a float can be off at powers of two for huge ratios)
    while m and Fraction(2) ** lead > m:
        lead -= 1
    while m and Fraction(2) ** (lead + 1) <= m:
        lead += 1
    e = lead - EMAX[fmt]
    if e > 127:
        return 0xFF, [0] * len(block_values)
    e = max(e, -127)
    x = Fraction(2) ** e
    sign_bit = 1 << sum(FIELDS[fmt][:2])
    out = []
    for f, v in zip(block_values, vals):
        if v == 0:
            out.append(sign_bit if math.copysign(1.0, f) < 0 else 0)  # Fraction drops -0's sign
        else:
            out.append(round_rne_saturate(fmt, v / x))
    return e + 127, out


@pytest.mark.parametrize("fmt", ["e2m1", "e2m3", "e3m2", "e4m3", "e5m2"])
def test_quantize_mx_matches_oracle(fmt):
    rng = np.random.default_rng(11)
    rows = []
    for scale in (1.0, 1e-30, 1e30, 3.0e-39, 1e-44):
        rows.append(rng.standard_normal(64) * scale)
    rows.append(np.zeros(64))
    x = np.array(rows, dtype=np.float32)
    x[0, 5] = -0.0
    x[1, 40] = np.inf  # second block of row 1
    x[2, 3] = np.nan
    scales, elems, _ = bf16emu.quantize_mx(x, fmt, block=32)
    assert scales.shape == (x.shape[0], 2) and elems.shape == x.shape
    for r in range(x.shape[0]):
        for b in range(2):
            vals = [float(v) for v in x[r, 32 * b:32 * (b + 1)]]
            s, e = quantize_oracle(vals, fmt)
            assert int(scales[r, b]) == s, (fmt, r, b)
            assert [int(v) for v in elems[r, 32 * b:32 * (b + 1)]] == e, (fmt, r, b)
    back = bf16emu.dequantize_mx(scales, elems, fmt, block=32)
    assert np.isnan(back[1, 32:]).all() and not np.isnan(back[0]).any()
    # exact inverse: element value times 2^(s - 127)
    r, k = 0, 7
    assert back[r, k] == float(decode(fmt, int(elems[r, k])) * Fraction(2) ** (int(scales[r, 0]) - 127))


def test_quantize_mx_bad_input():
    x = np.ones((2, 30), dtype=np.float32)
    with pytest.raises(ValueError, match=r"last axis of shape \(2, 30\) is not a multiple of block = 32"):
        bf16emu.quantize_mx(x, "e2m1")
    with pytest.raises(ValueError, match=r"'bf16' is not an MX element format"):
        bf16emu.quantize_mx(np.ones(32, dtype=np.float32), "bf16")
    with pytest.raises(ValueError, match=r"block' = 0"):
        bf16emu.quantize_mx(np.ones(32, dtype=np.float32), "e2m1", block=0)
    with pytest.raises(ValueError, match=r"does not match"):
        bf16emu.dequantize_mx(np.zeros(3, dtype=np.uint8), np.zeros(64, dtype=np.uint8), "e2m1")
