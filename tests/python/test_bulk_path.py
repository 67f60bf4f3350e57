"""The fast path of convert/add/sub/mul/fma (the src/bulk Highway kernels, or core/bulk.hpp's loops)
against the scalar path, bit for bit and flag for flag.

return_flags=True (here: a per-element flag array handed to _core) makes every element run the
scalar routine of the core, which is the reference; without it a chunk runs the bulk kernel where
the format pair, the op and the rounding mode have one (python/src/elementwise.cpp). Each format
pair and op is compared on 10^6 bit patterns (random bits, values near the target format's range,
rounding ties and carries, NaN / Inf / zero / subnormal / overflow cases) in every deterministic
rounding mode, and on 2 * 10^5 under each policy variant (ftz, daz, saturate, NaN policies,
tininess before rounding); the OR of the fast path's flags must equal the OR of the scalar mask.
"""

import numpy as np
import pytest

import bf16emu
from bf16emu import _core

N = 1_000_000
N_POLICY = 200_000
MODES = ["nearest_even", "nearest_away", "toward_zero", "upward", "downward", "to_odd"]
POLICIES = [
    dict(ftz=True),
    dict(daz=True),
    dict(ftz=True, daz=True, tininess="before"),
    dict(saturate=True, nan="cuda"),
    dict(nan="pytorch", daz=True),
    dict(tininess="before"),
]
POLICY_MODES = ["nearest_even", "toward_zero", "upward", "to_odd"]

# (exponent bits, fraction bits) of the formats src/bulk converts from and to fp32; tf32 is its
# 19-bit pattern, right-aligned.
SMALL = {"bf16": (8, 7), "tf32": (8, 10), "fp16": (5, 10), "e4m3": (4, 3), "e5m2": (5, 2)}
STORAGE = {"bf16": np.uint16, "tf32": np.uint32, "fp16": np.uint16, "e4m3": np.uint8, "e5m2": np.uint8}


def opts(rounding="nearest_even", tininess="after", nan="ieee", ftz=False, daz=False, saturate=False):
    return {"rounding": rounding, "tininess": tininess, "nan": nan, "ftz": ftz, "daz": daz, "saturate": saturate,
            "seed": 0, "threads": 0}


def f32_inputs(to: str, n: int, rng, inside=False) -> np.ndarray:
    """fp32 bit patterns for a narrowing to `to`: a quarter random bits, the rest exponents around
    `to`'s range (deep underflow .. past overflow; inside=True: its normal range only, so that
    whole vectors take the kernels' fast paths) with random fractions, exact ties at the cut,
    all ones below it (carries) or zeros below it; specials sprinkled in (not when inside)."""
    e_bits, m = SMALL[to]
    bias = (1 << (e_bits - 1)) - 1
    emin, emax = 1 - bias, bias + 1  # emax + 1 covers e4m3's extended range and the overflow edge
    sh = 23 - m
    x = rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)
    k = n if inside else n * 3 // 4
    lo, hi = max(1, 127 + emin - m - 3), min(254, 127 + emax + 1)
    if inside:
        lo, hi = 127 + emin, 127 + emax - 1
    E = rng.integers(lo, hi + 1, k, dtype=np.uint32)
    f = rng.integers(0, 1 << 23, k, dtype=np.uint32)
    kind = rng.integers(0, 4, k)
    cut = np.uint32(sh) + np.where(E < 127 + emin, np.minimum(127 + emin - E, 23 - sh), 0).astype(np.uint32)
    below = (np.uint32(1) << cut) - np.uint32(1)
    f = np.where(kind == 1, (f & ~below) | (np.uint32(1) << (cut - np.uint32(1))), f)  # a tie
    f = np.where(kind == 2, f | below, f)  # all ones below the cut
    f = np.where(kind == 3, f & ~below, f) & np.uint32(0x7FFFFF)  # exact
    sign = rng.integers(0, 2, k, dtype=np.uint32) << np.uint32(31)
    x[:k] = sign | (E << np.uint32(23)) | f
    if inside:
        return x
    specials = np.array([0, 1, 0x7FFFFF, 0x400000, 0x800000, 0x7F7FFFFF, 0x7F800000, 0x7F800001, 0x7FC00000,
                         0x7FBFFFFF, 0x7FFFFFFF, 0x3F800000, 0x477FE000, 0x477FF000, 0x43E00000, 0x43F00000,
                         0x47600000, 0x47700000, 0x33800000, 0x33000000, 0x38800000, 0x387FFFFF],
                        dtype=np.uint32)
    specials = np.concatenate([specials, specials | np.uint32(0x80000000)])
    pos = rng.integers(0, n, n // 16)
    x[pos] = specials[rng.integers(0, len(specials), len(pos))]
    return x[rng.permutation(n)]


def small_inputs(fmt: str, n: int, rng) -> np.ndarray:
    """Every encoding of `fmt` (16 bits or fewer) at least once when n allows, the rest random."""
    e_bits, m = SMALL[fmt]
    width = 1 + e_bits + m
    every = np.arange(1 << width, dtype=np.uint64)
    rest = rng.integers(0, 1 << width, max(0, n - len(every)), dtype=np.uint64)
    return np.concatenate([every, rest])[:n].astype(STORAGE[fmt])


def pairs16(fmt: str, n: int, rng, three=False):
    """bf16 / fp16 operand pairs (triples for fma): random bits; b near a (small exponent gaps,
    equal magnitudes, opposite signs: cancellation and exact zero sums); exponents near the top
    (overflow) and the bottom (subnormal, tiny results); specials (zeros, smallest subnormal,
    largest subnormal, min normal, max finite, Inf, signaling and quiet NaNs, 1)."""
    e_bits, m = SMALL[fmt]
    top_e = (1 << e_bits) - 1
    frac = (1 << m) - 1
    sign_frac = np.uint32(0x8000 | frac)
    a = rng.integers(0, 1 << 16, n, dtype=np.uint32)
    b = rng.integers(0, 1 << 16, n, dtype=np.uint32)
    q = n // 4
    gap = rng.integers(-(m + 13), m + 14, q).astype(np.int64)
    ea = (a[:q] >> m) & top_e
    eb = np.clip(ea.astype(np.int64) + gap, 0, top_e).astype(np.uint32)
    flip = rng.integers(0, 2, q, dtype=np.uint32) << np.uint32(15)
    same_frac = rng.integers(0, 3, q) == 0
    fb = np.where(same_frac, a[:q] & frac, b[:q] & frac)
    b[:q] = ((a[:q] & 0x8000) ^ flip) | (eb << m) | fb
    # Exponents at the ends of the range: subnormal / tiny, and the top binades (overflow).
    r = slice(q, 2 * q)
    top = rng.integers(0, 2, q) == 1
    for arr in (a, b):
        e = np.where(top, rng.integers(top_e - 10, top_e, q), rng.integers(0, 9, q)).astype(np.uint32)
        arr[r] = (arr[r] & sign_frac) | (e << m)
    inf = top_e << m
    specials = np.array([0, 0x8000, 1, frac, frac + 1, inf - 1, inf, 0x8000 | inf, inf + 1, inf | (1 << (m - 1)),
                         0x7FFF, (top_e >> 1) << m, 0x8000 | ((top_e >> 1) << m), 0x8000 | (frac + 1)],
                        dtype=np.uint32)
    for arr in (a, b):
        pos = rng.integers(0, n, n // 32)
        arr[pos] = specials[rng.integers(0, len(specials), len(pos))]
    out = [a.astype(np.uint16), b.astype(np.uint16)]
    if three:
        c = rng.integers(0, 1 << 16, n, dtype=np.uint32)
        # c near a * b's magnitude in a quarter: the exponent of a plus b's, minus the bias.
        e = np.clip(((a >> m) & top_e).astype(np.int64) + ((b >> m) & top_e) - (top_e >> 1) +
                    rng.integers(-9, 10, n), 0, top_e).astype(np.uint32)
        near = rng.integers(0, 4, n) == 0
        c = np.where(near, (c & sign_frac) | (e << m), c)
        out.append(c.astype(np.uint16))
    return out


def check(fast, scalar, what):
    (bits_f, flags_f), (bits_s, flags_s, mask) = fast, scalar
    bad = np.flatnonzero(bits_f != bits_s)
    assert bad.size == 0, (f"{what}: {bad.size} results differ; first at {bad[0]}: fast 0x{int(bits_f[bad[0]]):X} "
                           f"scalar 0x{int(bits_s[bad[0]]):X}")
    assert int(np.bitwise_or.reduce(mask)) == flags_s, f"{what}: the scalar mask's OR is not its flags"
    assert flags_f == flags_s, f"{what}: flags fast {flags_f:#x} scalar {flags_s:#x}"


def run_convert(x, src, dst, o):
    fast = _core.convert(x, src, dst, o)
    mask = np.zeros(x.shape, np.uint8)
    bits, flags = _core.convert(x, src, dst, o, None, mask)
    return fast, (bits, flags, mask)


def run_arith(op, ops, fmt, o):
    fast = _core.arith(op, ops, fmt, o)
    mask = np.zeros(ops[0].shape, np.uint8)
    bits, flags = _core.arith(op, ops, fmt, o, None, mask)
    return fast, (bits, flags, mask)


def test_module_uses_the_bulk_kernels():
    target = _core.bulk_target()
    if target is None:
        pytest.skip("module built without Google Highway (src/bulk): the fast path is core/bulk.hpp's")
    assert isinstance(target, str) and target


@pytest.mark.parametrize("to", sorted(SMALL))
def test_narrowing_matches_scalar(to):
    rng = np.random.default_rng(1000 + len(to) * 7 + ord(to[-1]))
    x = f32_inputs(to, N, rng)
    inside = f32_inputs(to, N_POLICY, rng, inside=True)
    for mode in MODES:
        check(*run_convert(x, "fp32", to, opts(mode)), f"fp32->{to} {mode}")
        check(*run_convert(inside, "fp32", to, opts(mode)), f"fp32->{to} {mode}, normal range")
    xs = x[:N_POLICY]
    for pol in POLICIES:
        for mode in POLICY_MODES:
            check(*run_convert(xs, "fp32", to, opts(mode, **pol)), f"fp32->{to} {mode} {pol}")
    # Normal numbers of `to` (widened by the scalar path, exact), at most one moved off its grid:
    # the OR of the flags then comes from that one element, wherever its chunk or vector lies.
    e_bits, m = SMALL[to]
    field = rng.integers(1, (1 << e_bits) - 1, 100_003).astype(np.uint32)
    bits = (rng.integers(0, 2, field.size, dtype=np.uint32) << np.uint32(e_bits + m)) | (field << np.uint32(m)) | \
        rng.integers(0, 1 << m, field.size, dtype=np.uint32)
    exact, _ = _core.convert(bits.astype(STORAGE[to]), to, "fp32", opts(), None, np.zeros(field.size, np.uint8))
    for where in (None, 0, 70_000, int(rng.integers(0, field.size))):
        y = exact.copy()
        if where is not None:
            y[where] += np.uint32(1)
        for mode in ("nearest_even", "upward"):
            check(*run_convert(y, "fp32", to, opts(mode)), f"fp32->{to} {mode}, exact but element {where}")


@pytest.mark.parametrize("src", sorted(SMALL))
def test_widening_matches_scalar(src):
    rng = np.random.default_rng(2000 + ord(src[0]) + ord(src[-1]))
    x = small_inputs(src, N, rng)  # every encoding (tf32: all 2^19) and random ones up to 10^6
    for pol in [{}] + POLICIES:
        check(*run_convert(x, src, "fp32", opts(**pol)), f"{src}->fp32 {pol}")


@pytest.mark.parametrize("src,to", [("bf16", "fp16"), ("bf16", "e4m3"), ("bf16", "e5m2"), ("fp16", "bf16"),
                                    ("fp16", "e4m3"), ("fp16", "e5m2"), ("e4m3", "bf16"), ("e5m2", "fp16"),
                                    ("e4m3", "e5m2"), ("tf32", "bf16")])
def test_conversion_through_fp32_matches_scalar(src, to):
    """Between two of bf16/tf32/fp16/e4m3/e5m2 the fast path widens to fp32 and narrows."""
    rng = np.random.default_rng(4000 + ord(src[0]) * 3 + ord(to[-1]))
    x = small_inputs(src, N, rng)
    for mode in MODES:
        check(*run_convert(x, src, to, opts(mode)), f"{src}->{to} {mode}")
    xs = x[: max(N_POLICY, 1 << (1 + sum(SMALL[src])))]  # every encoding of src
    for pol in POLICIES:
        for mode in POLICY_MODES:
            check(*run_convert(xs, src, to, opts(mode, **pol)), f"{src}->{to} {mode} {pol}")


@pytest.mark.parametrize("fmt,op", [("bf16", "add"), ("bf16", "sub"), ("bf16", "mul"), ("bf16", "fma"),
                                    ("fp16", "add"), ("fp16", "sub"), ("fp16", "mul")])
def test_arith_matches_scalar(fmt, op):
    rng = np.random.default_rng(3000 + len(op) + ord(op[0]) + ord(fmt[0]))
    ops = pairs16(fmt, N, rng, three=op == "fma")
    for mode in MODES:
        check(*run_arith(op, ops, fmt, opts(mode)), f"{fmt} {op} {mode}")
    small = [o[:N_POLICY] for o in ops]
    for pol in POLICIES:
        for mode in POLICY_MODES:
            check(*run_arith(op, small, fmt, opts(mode, **pol)), f"{fmt} {op} {mode} {pol}")


def test_public_functions_take_the_fast_path_with_the_same_bits():
    """bf16emu.convert / add on a float32 array give the scalar path's bits (return_flags=True)."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal(100_000).astype(np.float32) * np.float32(1e3)
    y = rng.standard_normal(100_000).astype(np.float32)
    for to in ("bf16", "fp16", "e4m3"):
        fast = bf16emu.convert(x, to=to)
        slow, mask, flags = bf16emu.convert(x, to=to, return_flags=True)
        assert np.array_equal(np.asarray(fast).view(np.uint8), np.asarray(slow).view(np.uint8)), to
    a = np.asarray(bf16emu.convert(x, to="bf16"))
    b = np.asarray(bf16emu.convert(y, to="bf16"))
    for fn in (bf16emu.add, bf16emu.sub, bf16emu.mul):
        fast = fn(a, b, format="bf16")
        slow, _, _ = fn(a, b, format="bf16", return_flags=True)
        assert np.array_equal(np.asarray(fast), np.asarray(slow)), fn.__name__
    h, k = x.astype(np.float16), y.astype(np.float16)
    for fn in (bf16emu.add, bf16emu.sub, bf16emu.mul):
        fast = fn(h, k)
        slow, _, _ = fn(h, k, return_flags=True)
        assert np.array_equal(np.asarray(fast).view(np.uint16), np.asarray(slow).view(np.uint16)), fn.__name__
