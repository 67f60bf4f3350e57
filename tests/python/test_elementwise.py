"""Element-wise functions of the bf16emu package: dtypes, shapes, flags, round trips, stochastic
rounding, the trace, and bad input. Expected values are written out by hand (bit patterns from
the formats' definitions), never computed by bf16emu."""

import numpy as np
import pytest

import bf16emu
from bf16emu import Flags


def bf(*bits):
    return np.array(bits, dtype=np.uint16)


def test_convert_fp32_to_bf16_known_values():
    # 1.0, 1 + 2^-8 (tie -> even 1.0), 1 + 3*2^-8 (tie -> up), max float (overflow -> inf), -0.0
    x = np.array([1.0, 1.00390625, 1.01171875, 3.4028234663852886e38, -0.0], dtype=np.float32)
    y, _, flags = bf16emu.convert(x, to="bf16", return_flags=True)
    assert y.dtype == np.uint16
    assert [hex(v) for v in y] == ["0x3f80", "0x3f80", "0x3f82", "0x7f80", "0x8000"]
    assert flags == Flags.INEXACT | Flags.OVERFLOW


def test_convert_rounding_modes_and_saturate():
    x = np.array([1.00390625, -1.00390625], dtype=np.float32)  # exactly halfway
    assert list(bf16emu.convert(x, to="bf16", rounding="rne")) == [0x3F80, 0xBF80]
    assert list(bf16emu.convert(x, to="bf16", rounding="nearest_away")) == [0x3F81, 0xBF81]
    assert list(bf16emu.convert(x, to="bf16", rounding="upward")) == [0x3F81, 0xBF80]
    assert list(bf16emu.convert(x, to="bf16", rounding="downward")) == [0x3F80, 0xBF81]
    assert list(bf16emu.convert(x, to="bf16", rounding="toward_zero")) == [0x3F80, 0xBF80]
    big = np.array([3.4028234663852886e38], dtype=np.float32)
    assert list(bf16emu.convert(big, to="bf16", saturate=True)) == [0x7F7F]


def test_any_shape_and_non_contiguous():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4) * np.float32(1.1)
    y = bf16emu.convert(x, to="bf16")
    assert y.shape == (2, 3, 4)
    t = x.transpose(2, 0, 1)  # non-contiguous: copied, same values per element
    yt = bf16emu.convert(t, to="bf16")
    np.testing.assert_array_equal(yt, y.transpose(2, 0, 1))
    z = bf16emu.convert(np.float32(2.5), to="fp16")
    assert z.shape == () and z.dtype == np.float16 and int(z.view(np.uint16)) == 0x4100


def test_empty_and_thread_count_independent():
    e, _, f = bf16emu.add(np.zeros((0, 3), np.float32), np.zeros((0, 3), np.float32), return_flags=True)
    assert e.shape == (0, 3) and f == Flags.NONE
    rng = np.random.default_rng(2)
    a = rng.integers(0, 1 << 16, size=300000, dtype=np.uint32).astype(np.uint16)  # > 4 chunks
    b = rng.integers(0, 1 << 16, size=300000, dtype=np.uint32).astype(np.uint16)
    for op in (bf16emu.add, bf16emu.div):
        one = op(a, b, format="bf16", threads=1)
        many = op(a, b, format="bf16", threads=4)
        np.testing.assert_array_equal(one, many)
        one, m1, f1 = op(a, b, format="bf16", threads=1, return_flags=True)
        many, m4, f4 = op(a, b, format="bf16", threads=4, return_flags=True)
        np.testing.assert_array_equal(one, many)
        np.testing.assert_array_equal(m1, m4)
        assert f1 == f4


def test_gil_released():
    import threading
    import time
    x = np.random.default_rng(3).standard_normal(4_000_000).astype(np.float32)
    y = x + np.float32(1)
    ticks = []
    t = threading.Thread(target=lambda: bf16emu.div(x, y, threads=1))  # scalar div: ~0.1 s or more
    t.start()
    while t.is_alive():  # this loop runs only while the worker does not hold the GIL
        ticks.append(time.perf_counter())
        time.sleep(0.001)
    t.join()
    assert len(ticks) > 20, len(ticks)  # holding the GIL, the call would leave one or two


def test_arith_bf16_known_values():
    # 1 + 2^-8: a tie in bf16 -> 1.0; 1.5 * 1.5 = 2.25 exact; 1 / 3 in bf16 = 0x3EAB
    s, _, f = bf16emu.add(bf(0x3F80), bf(0x3B80), format="bf16", return_flags=True)
    assert list(s) == [0x3F80] and f == Flags.INEXACT
    p, _, f = bf16emu.mul(bf(0x3FC0), bf(0x3FC0), format="bf16", return_flags=True)
    assert list(p) == [0x4010] and f == Flags.NONE
    q = bf16emu.div(bf(0x3F80), bf(0x4040), format="bf16")
    assert list(q) == [0x3EAB]
    d, _, f = bf16emu.div(bf(0x3F80), bf(0x0000), format="bf16", return_flags=True)
    assert list(d) == [0x7F80] and f == Flags.DIVBYZERO
    r, _, f = bf16emu.sqrt(bf(0x4080), format="bf16", return_flags=True)  # sqrt(4) = 2
    assert list(r) == [0x4000] and f == Flags.NONE
    n, _, f = bf16emu.sub(bf(0x7F80), bf(0x7F80), format="bf16", nan="cuda", return_flags=True)
    assert list(n) == [0x7FFF] and f == Flags.INVALID
    n = bf16emu.sub(bf(0x7F80), bf(0x7F80), format="bf16", nan="pytorch")
    assert list(n) == [0x7FC0]


def test_fma_single_rounding():
    # fp32: (1 + 2^-23) * (1 - 2^-23) - 1 = -2^-46 exactly with one rounding (a separate
    # multiply would round the product to 1 and give 0).
    a = np.array([1.0000001192092896], dtype=np.float32)
    b = np.array([0.99999988079071045], dtype=np.float32)
    c = np.array([-1.0], dtype=np.float32)
    r = bf16emu.fma(a, b, c)
    assert r.dtype == np.float32 and r[0] == np.float32(-2.0 ** -46)
    m = bf16emu.mul(a, b)
    assert m[0] == np.float32(1.0)


def test_fp16_numpy_native_and_fp8():
    a = np.array([1.0, 65504.0], dtype=np.float16)
    r, _, f = bf16emu.add(a, a, return_flags=True)
    assert r.dtype == np.float16 and list(r.view(np.uint16)) == [0x4000, 0x7C00]
    assert f & Flags.OVERFLOW
    e = bf16emu.convert(np.array([448.0, 500.0, 1.0], dtype=np.float32), to="e4m3", saturate=True)
    assert e.dtype == np.uint8 and list(e) == [0x7E, 0x7E, 0x38]
    s = bf16emu.add(np.array([0x38], np.uint8), np.array([0x38], np.uint8), format="e4m3")
    assert list(s) == [0x40]


def test_flags_are_or_of_elements():
    x = np.array([1.0, 3.4028234663852886e38, 0.0], dtype=np.float32)
    y = np.array([0.0, 3.4028234663852886e38, 0.0], dtype=np.float32)
    _, _, f = bf16emu.add(x, y, return_flags=True)
    assert f == Flags.OVERFLOW | Flags.INEXACT
    _, _, f = bf16emu.div(x, y, return_flags=True)
    assert f == Flags.INVALID | Flags.DIVBYZERO  # 1/0 and 0/0; max/max = 1 exactly


def test_round_trips_numpy():
    rng = np.random.default_rng(1)
    bits = rng.integers(0, 1 << 16, size=100000, dtype=np.uint32).astype(np.uint16)
    for fmt, nan_above in (("bf16", 0x7F80), ("fp16", 0x7C00)):
        wide = bf16emu.convert(bits, format=fmt, to="fp32")
        back = bf16emu.convert(wide, to=fmt)
        back = back.view(np.uint16)  # fp16 from a float32 array comes back as numpy float16
        keep = (bits & 0x7FFF) <= nan_above  # NaNs come back quieted
        np.testing.assert_array_equal(back[keep], bits[keep])
        q = bits[~keep] | np.uint16(0x40 if fmt == "bf16" else 0x200)
        np.testing.assert_array_equal(back[~keep], q)


def test_round_trips_torch():
    torch = pytest.importorskip("torch")
    t = torch.randn(3, 5, 7).to(torch.bfloat16)
    bits = bf16emu.convert(t, to="fp32")
    assert bits.dtype == torch.float32 and bits.shape == t.shape
    assert torch.equal(bits, t.float())
    back = bf16emu.convert(bits, to="bf16")
    assert back.dtype == torch.bfloat16 and torch.equal(back, t)
    s = bf16emu.add(t, t)
    assert s.dtype == torch.bfloat16 and torch.equal(s, t + t)
    nc = t.transpose(0, 2)  # non-contiguous tensor
    s2 = bf16emu.mul(nc, nc)
    assert torch.equal(s2, nc * nc)
    h = torch.randn(10).half()
    assert torch.equal(bf16emu.div(h, h + 3), h / (h + 3))


def test_stochastic_rounding_reproducible():
    x = np.full(100000, 1.0 + 2.0 ** -10, dtype=np.float32)  # 1/8 of a bf16 ulp above 1.0
    a = bf16emu.convert(x, to="bf16", rounding="stochastic", seed=42)
    b = bf16emu.convert(x, to="bf16", rounding="stochastic", seed=42, threads=1)
    c = bf16emu.convert(x, to="bf16", rounding="stochastic", seed=43)
    np.testing.assert_array_equal(a, b)
    assert (a != c).any()
    ups = np.count_nonzero(a == 0x3F81) / a.size
    assert abs(ups - 0.125) < 0.01  # P(up) = discarded fraction = 1/8
    # The same element, traced: the same decision.
    tr = bf16emu.trace("convert", float(x[0]), to="bf16", rounding="stochastic", seed=42, index=5)
    assert tr["result_bits"] == int(a[5])


def test_trace_dict():
    t = bf16emu.trace("add", 0x3F80, 0x3B80, format="bf16")  # 1 + 2^-8: tie, kept even
    assert t["guard"] == 1 and t["round"] == 0 and t["sticky"] == 0
    assert t["decision"] == "tie_down"
    assert t["result_bits"] == 0x3F80
    assert t["error"] == "-0.00390625"
    assert t["error_value"] == -(2.0 ** -8)
    assert t["flags"] == Flags.INEXACT
    t = bf16emu.trace("add", -2.4071154594421387, -2.296875, to="bf16")  # fp32 then bf16
    assert t["format"] == "fp32" and t["result_format"] == "bf16" and len(t["steps"]) == 2
    t = bf16emu.trace("sqrt", 2.0, format="bf16")  # sqrt(2) = 1.0110101000001...: kept 1.0110101, down
    assert t["result_bits"] == 0x3FB5 and t["decision"] == "down" and t["sticky"] == 1
    assert t["error_exact"] is False
    t = bf16emu.trace("mul", 1.5, 1.5)
    assert t["decision"] == "exact" and t["result"] == 2.25


BAD = [
    (lambda: bf16emu.convert(np.zeros(3, np.int32), to="bf16"), TypeError, "argument 'x'"),
    (lambda: bf16emu.convert(np.zeros(3, np.uint16), to="bf16"), TypeError, "format="),
    (lambda: bf16emu.convert(np.zeros(3, np.float32), to="bf17"), ValueError, "bf17"),
    (lambda: bf16emu.convert(np.zeros(3, np.float32), to="bf16", rounding="nearest_odd"), ValueError,
     "rounding"),
    (lambda: bf16emu.convert(np.zeros(3, np.float32), to="bf16", tininess="sometimes"), ValueError,
     "tininess"),
    (lambda: bf16emu.convert(np.zeros(3, np.float32), to="bf16", nan="quiet"), ValueError, "'nan'"),
    (lambda: bf16emu.convert(np.zeros(3, np.float32), to="bf16", seed=float("nan")), ValueError, "seed"),
    (lambda: bf16emu.convert(np.zeros(3, np.float32), to="bf16", seed=-1), ValueError, "seed"),
    (lambda: bf16emu.convert(np.zeros(3, np.float32), to="bf16", seed="abc"), TypeError, "seed"),
    (lambda: bf16emu.add(np.zeros(3, np.float32), np.zeros(4, np.float32)), ValueError, "argument 'b'"),
    (lambda: bf16emu.add(np.zeros(3, np.float32), np.zeros(3, np.float16)), TypeError, "argument 'b'"),
    (lambda: bf16emu.add(np.zeros(3, np.uint16), np.zeros(3, np.uint16), format="fp32"), TypeError,
     "argument 'a'"),
    (lambda: bf16emu.add(np.zeros(3, np.float64), np.zeros(3, np.float64)), ValueError, "format"),
    (lambda: bf16emu.add("1.0", np.zeros(3, np.float32)), TypeError, "argument 'a'"),
    (lambda: bf16emu.sqrt(np.zeros(3, np.float32), threads=-2), ValueError, "threads"),
    (lambda: bf16emu.trace("pow", 1.0, 2.0), ValueError, "op"),
    (lambda: bf16emu.trace("add", 1.0), ValueError, "add takes 2"),
    (lambda: bf16emu.trace("add", 0x1FFFF, 0x3F80, format="bf16"), ValueError, "does not fit"),
]


@pytest.mark.parametrize("call,exc,text", BAD, ids=[str(i) for i in range(len(BAD))])
def test_bad_input(call, exc, text):
    with pytest.raises(exc, match=None) as info:
        call()
    assert text in str(info.value), str(info.value)


def test_bad_input_torch():
    torch = pytest.importorskip("torch")
    with pytest.raises(TypeError, match="argument 'a'"):
        bf16emu.add(torch.zeros(3, dtype=torch.int32), torch.zeros(3, dtype=torch.int32))
    with pytest.raises(TypeError, match="argument 'x'"):
        bf16emu.convert(torch.zeros(3, dtype=torch.bfloat16), format="fp16", to="fp32")
