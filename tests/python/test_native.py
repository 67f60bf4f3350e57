"""Results as plain arrays and tensors (issue 34): np.asarray of a result, broadcasting, out=,
per-element flag masks (return_flags=True) checked against NumPy's own IEEE arithmetic, the
deprecated legacy_tuple form, tf32 bit patterns and tf32 gemm, the torch fp8 round trip, and
finfo checked against torch.finfo and constants from the format definitions (OCP MX v1.0, OCP
OFP8), not against bf16emu."""

import math
import warnings

import numpy as np
import pytest

import bf16emu
from bf16emu import Flags

INEXACT, OVERFLOW, UNDERFLOW, INVALID = 16, 4, 8, 1


def rne_bf16(x32: np.ndarray) -> np.ndarray:
    """fp32 -> bf16 bits, nearest even, for non-NaN inputs (the textbook bit trick)."""
    u = x32.view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def random_f32(rng, n):
    """Finite fp32 values over the whole exponent range (subnormals included), both signs."""
    bits = rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)
    bits = np.where((bits & 0x7F800000) == 0x7F800000, bits & 0xBFFFFFFF, bits)  # no inf/NaN
    return bits.view(np.float32)


def test_result_is_a_plain_array():
    x = np.float32([1 / 3, 1.0, -2.5, 3e38])
    y = np.asarray(bf16emu.convert(x, to="bf16"))
    assert y.dtype == np.uint16 and y.shape == (4,)
    assert y.tolist() == rne_bf16(x).tolist() == [0x3EAB, 0x3F80, 0xC020, 0x7F62]
    s = bf16emu.add(np.float32([1.0, 2.0]), np.float32([0.5, 0.25]))
    assert isinstance(s, np.ndarray) and s.dtype == np.float32 and s.tolist() == [1.5, 2.25]
    assert np.asarray(bf16emu.sqrt(np.float32([4.0, 2.0]))).tolist() == [2.0, np.float32(np.sqrt(np.float32(2)))]


def test_broadcasting_like_numpy():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((3, 1)).astype(np.float32)
    b = rng.standard_normal((4,)).astype(np.float32)
    for op, ref in ((bf16emu.add, np.add), (bf16emu.sub, np.subtract), (bf16emu.mul, np.multiply),
                    (bf16emu.div, np.divide)):
        r = op(a, b)
        assert r.shape == (3, 4)
        assert np.array_equal(r.view(np.uint32), ref(a, b).view(np.uint32))
        assert np.array_equal(r, op(np.broadcast_to(a, (3, 4)), np.broadcast_to(b, (3, 4))))
    c = np.float32(0.25)  # 0-d
    r = bf16emu.fma(a, b, c)
    want = (a.astype(np.float64) * b.astype(np.float64) + 0.25).astype(np.float32)  # exact product, one rounding
    assert r.shape == (3, 4) and np.array_equal(r, want)
    with pytest.raises(ValueError, match=r"argument .b.: shape \(4,\) does not broadcast"):
        bf16emu.add(np.zeros(3, np.float32), np.zeros(4, np.float32))


def test_broadcasting_bits_and_tensors():
    torch = pytest.importorskip("torch")
    a = torch.tensor([[1.0], [2.0]], dtype=torch.bfloat16)
    b = torch.tensor([0.5, 0.25, 0.125], dtype=torch.bfloat16)
    r = bf16emu.add(a, b)
    assert r.dtype == torch.bfloat16 and torch.equal(r, a + b)
    bits = bf16emu.mul(np.uint16([[0x4000]]), np.uint16([0x3F80, 0x4040]), format="bf16")  # 2 * [1, 3]
    assert bits.tolist() == [[0x4000, 0x40C0]]


def test_out():
    a = np.float32([1.0, 2.0, 3.0])
    b = np.float32([0.5, 0.5, 0.5])
    out = np.empty(3, np.float32)
    r = bf16emu.add(a, b, out=out)
    assert r is out and out.tolist() == [1.5, 2.5, 3.5]
    bits = np.zeros(3, np.uint16)
    assert bf16emu.convert(a, to="bf16", out=bits) is bits and bits.tolist() == [0x3F80, 0x4000, 0x4040]
    big = np.zeros((3, 2), np.float32)  # a strided out: written through a copy
    bf16emu.mul(a, b, out=big[:, 1])
    assert big[:, 1].tolist() == [0.5, 1.0, 1.5] and big[:, 0].tolist() == [0, 0, 0]
    x = a.copy()  # out aliases an operand
    bf16emu.add(x, x, out=x)
    assert x.tolist() == [2.0, 4.0, 6.0]
    y = np.arange(5, dtype=np.float32)  # out overlaps an operand shifted by one
    bf16emu.add(y[:4], np.float32([10]), out=y[1:])
    assert y.tolist() == [0, 10, 11, 12, 13]
    swapped = np.zeros(3, ">f4")  # the other byte order: written by value
    bf16emu.add(a, b, out=swapped)
    assert swapped.tolist() == [1.5, 2.5, 3.5] and swapped.tobytes()[:4] == b"\x3f\xc0\x00\x00"
    bits_be = np.zeros(3, ">u2")
    bf16emu.convert(a, to="bf16", out=bits_be)
    assert bits_be.tobytes() == bytes.fromhex("3f8040004040")
    zero_d = np.zeros((), np.uint16)
    assert bf16emu.convert(np.float32(1 / 3), to="bf16", out=zero_d) is zero_d and int(zero_d) == 0x3EAB
    with pytest.raises(TypeError, match="out"):
        bf16emu.add(a, b, out=np.empty(3, np.float64))
    with pytest.raises(ValueError, match="out"):
        bf16emu.add(a, b, out=np.empty(4, np.float32))
    r, mask, flags = bf16emu.div(a, np.float32([3, 0, 1]), out=out, return_flags=True)
    assert r is out and mask.tolist() == [INEXACT, 2, 0] and flags == Flags.INEXACT | Flags.DIVBYZERO


def test_out_tensor():
    torch = pytest.importorskip("torch")
    a = torch.tensor([1.0, 2.0, 3.0])
    out = torch.empty(3)
    assert bf16emu.mul(a, a, out=out) is out and out.tolist() == [1.0, 4.0, 9.0]
    out16 = torch.empty(3, dtype=torch.bfloat16)
    bf16emu.convert(a, to="bf16", out=out16)
    assert torch.equal(out16, a.to(torch.bfloat16))
    strided = torch.zeros(3, 2)
    bf16emu.add(a, a, out=strided[:, 0])
    assert strided[:, 0].tolist() == [2.0, 4.0, 6.0] and strided[:, 1].tolist() == [0, 0, 0]


def test_convert_flag_mask_against_numpy():
    rng = np.random.default_rng(2)
    x = np.concatenate([random_f32(rng, 200000),
                        np.float32([3.3895314e38, 3.3961776e38, 3.4e38, -3.4e38, 1e-40, -1e-45, 0.0, -0.0])])
    y, mask, flags = bf16emu.convert(x, to="bf16", return_flags=True)
    assert mask.dtype == np.uint8 and mask.shape == x.shape
    assert np.array_equal(y, rne_bf16(x))
    back = (y.astype(np.uint32) << 16).view(np.float32)  # exact widening
    inexact = back != x
    mag = x.view(np.uint32) & 0x7FFFFFFF
    overflow = mag >= 0x7F7F8000  # at or above max + half an ulp: rounds past the largest bf16
    tiny = np.abs(x) < np.float32(2.0**-126)
    want = np.where(inexact, INEXACT, 0) | np.where(overflow, OVERFLOW, 0) | np.where(tiny & inexact, UNDERFLOW, 0)
    edge = (y & 0x7FFF) == 0x0080  # rounds to 2^-126: tininess after rounding decides, not checked here
    assert np.count_nonzero(overflow) >= 3 and np.count_nonzero(tiny & inexact) > 100
    assert np.array_equal(mask[~edge], want[~edge].astype(np.uint8))
    assert flags == Flags(int(np.bitwise_or.reduce(mask)))


def test_arith_flag_mask_against_numpy():
    rng = np.random.default_rng(3)
    a = random_f32(rng, 100000)
    b = random_f32(rng, 100000)
    a[:4] = [np.inf, 0.0, 3e38, 1e-30]
    b[:4] = [0.0, np.inf, 3e38, 1e-30]
    r, mask, flags = bf16emu.mul(a, b, return_flags=True)
    with np.errstate(all="ignore"):
        exact = a.astype(np.float64) * b.astype(np.float64)  # exact: 48 significant bits
        want_r = np.multiply(a, b)
    assert np.array_equal(r.view(np.uint32)[4:], want_r.view(np.uint32)[4:])
    invalid = np.isnan(exact)
    overflow = np.isinf(r) & np.isfinite(exact)
    inexact = (r.astype(np.float64) != exact) & ~invalid
    tiny = np.abs(exact) < 2.0**-126
    want = (np.where(inexact, INEXACT, 0) | np.where(overflow, OVERFLOW, 0) |
            np.where(tiny & inexact, UNDERFLOW, 0) | np.where(invalid, INVALID, 0))
    edge = np.abs(r) == np.float32(2.0**-126)
    assert mask[:4].tolist() == [INVALID, INVALID, OVERFLOW | INEXACT, UNDERFLOW | INEXACT]
    assert np.count_nonzero(overflow) > 1000 and np.count_nonzero(tiny & inexact) > 1000
    assert np.array_equal(mask[~edge], want[~edge].astype(np.uint8))
    assert flags == Flags(int(np.bitwise_or.reduce(mask)))
    # The same bits as without a mask (which takes the bulk path where there is one).
    for op in (bf16emu.add, bf16emu.sub):
        plain = op(a, b)
        masked, m, _ = op(a, b, return_flags=True)
        assert np.array_equal(plain.view(np.uint32), masked.view(np.uint32))


def test_flag_mask_of_a_tensor_is_a_tensor():
    torch = pytest.importorskip("torch")
    r, mask, flags = bf16emu.convert(torch.tensor([1.0, 1 / 3, 1e5]), to="fp16", return_flags=True)
    assert mask.dtype == torch.uint8 and mask.tolist() == [0, INEXACT, OVERFLOW | INEXACT]
    assert r.dtype == torch.float16 and flags == Flags.OVERFLOW | Flags.INEXACT


def test_legacy_tuple():
    x = np.float32([1 / 3, 1.0])
    with pytest.warns(DeprecationWarning, match="legacy_tuple"):
        r, f = bf16emu.convert(x, to="bf16", legacy_tuple=True)
    assert r.tolist() == [0x3EAB, 0x3F80] and f == Flags.INEXACT and isinstance(f, Flags)
    with pytest.warns(DeprecationWarning):
        s, f = bf16emu.add(x, x, legacy_tuple=True)
    assert np.array_equal(s, x + x) and f == Flags.NONE
    with pytest.warns(DeprecationWarning):
        r, f = bf16emu.fma(x, x, x, legacy_tuple=True)
    with pytest.raises(ValueError, match="exclude"):
        bf16emu.convert(x, to="bf16", legacy_tuple=True, return_flags=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        bf16emu.convert(x, to="bf16")  # the plain form warns about nothing


def test_tf32_bits():
    x = np.float32([1.0, -2.5, 1 + 2.0**-10, 1 + 2.0**-11, 1 + 3 * 2.0**-11])
    t = bf16emu.convert(x, to="tf32")
    assert t.dtype == np.uint32
    # tf32: sign, 8 exponent, 10 fraction bits: the top 19 bits of the fp32 pattern, nearest even.
    u = x.view(np.uint32).astype(np.uint64)
    want = ((u + 0xFFF + ((u >> 13) & 1)) >> 13).astype(np.uint32)
    assert t.tolist() == want.tolist() and t[0] == 0x3F800000 >> 13
    back = bf16emu.convert(t, to="fp32", format="tf32")
    assert np.array_equal(back.view(np.uint32), (want << 13))
    s = bf16emu.add(t, t, format="tf32")
    assert s.tolist() == [int(v) + (1 << 10) for v in want]  # doubling adds one to the exponent
    with pytest.raises(ValueError, match="tf32"):
        bf16emu.convert(np.uint32([1 << 19]), to="fp32", format="tf32")
    with pytest.raises(TypeError, match="uint32"):
        bf16emu.convert(np.uint16([1]), to="fp32", format="tf32")


def test_tf32_gemm():
    rng = np.random.default_rng(4)
    A = rng.integers(-8, 9, (16, 8)).astype(np.float32)
    B = rng.integers(-8, 9, (8, 8)).astype(np.float32)
    a = bf16emu.convert(A, to="tf32")
    b = bf16emu.convert(B, to="tf32")
    d = bf16emu.gemm(a, b, a_format="tf32", arch="sm80")
    assert d.dtype == np.float32 and np.array_equal(d, A @ B)  # small integers: every sum exact
    d1 = bf16emu.mma(a, b, a_format="tf32", arch="sm80")
    assert np.array_equal(d1, A @ B)


def test_tf32_tensor_bits():
    torch = pytest.importorskip("torch")
    t = bf16emu.convert(torch.tensor([1.0, -2.5]), to="tf32")
    assert t.dtype == torch.int32 and t.tolist() == [0x3F800000 >> 13, 0xC0200000 >> 13]
    back = bf16emu.convert(t, to="fp32", format="tf32")
    assert back.dtype == torch.float32 and back.tolist() == [1.0, -2.5]


def decode(code: int, e: int, m: int, enc: str) -> float:
    """The value of a code from the format definition (OCP OFP8 / MX v1.0, IEEE 754)."""
    sign = -1.0 if code >> (e + m) & 1 else 1.0
    ef, f = code >> m & ((1 << e) - 1), code & ((1 << m) - 1)
    bias = (1 << (e - 1)) - 1
    if enc == "ieee" and ef == (1 << e) - 1:
        return sign * math.inf if f == 0 else math.nan
    if enc == "fn" and ef == (1 << e) - 1 and f == (1 << m) - 1:
        return math.nan
    if ef == 0:
        return sign * f * 2.0 ** (1 - bias - m)
    return sign * (1 + f / (1 << m)) * 2.0 ** (ef - bias)


SMALL = {"e4m3": (4, 3, "fn"), "e5m2": (5, 2, "ieee"), "e2m3": (2, 3, "finite"), "e3m2": (3, 2, "finite"),
         "e2m1": (2, 1, "finite")}


@pytest.mark.parametrize("fmt", sorted(SMALL))
def test_torch_small_formats_round_trip(fmt):
    torch = pytest.importorskip("torch")
    e, m, enc = SMALL[fmt]
    n = 1 << (1 + e + m)
    codes = torch.arange(n, dtype=torch.int32).to(torch.uint8)
    wide = bf16emu.convert(codes, to="fp32", format=fmt)
    assert wide.dtype == torch.float32
    want = np.array([decode(c, e, m, enc) for c in range(n)])
    got = wide.numpy().astype(np.float64)
    assert np.array_equal(np.isnan(got), np.isnan(want)) and np.array_equal(got[~np.isnan(got)], want[~np.isnan(want)])
    back = bf16emu.convert(wide, to=fmt)
    assert back.dtype == torch.uint8
    keep = ~np.isnan(want)
    assert torch.equal(back[torch.from_numpy(keep)], codes[torch.from_numpy(keep)])
    t = torch.randn(4096) * 4
    q = bf16emu.convert(t, to=fmt, saturate=True)
    assert q.dtype == torch.uint8
    again = bf16emu.convert(bf16emu.convert(q, to="fp32", format=fmt), to=fmt)
    assert torch.equal(again, q)
    assert np.array_equal(q.numpy(), bf16emu.convert(t.numpy(), to=fmt, saturate=True))  # same bits as NumPy


def test_torch_e4m3_round_trip():
    torch = pytest.importorskip("torch")
    t = torch.randn(1000)
    e = bf16emu.convert(t, to="e4m3")
    assert e.dtype == torch.uint8
    v = bf16emu.convert(e, to="fp32", format="e4m3")
    assert torch.equal(bf16emu.convert(v, to="e4m3"), e)
    s = bf16emu.add(e, e, format="e4m3")  # arithmetic on uint8 bit tensors
    assert s.dtype == torch.uint8
    with pytest.raises(TypeError, match="format="):
        bf16emu.convert(e, to="fp32")
    with pytest.raises(TypeError, match="int16"):
        bf16emu.convert(e, to="fp32", format="bf16")
    h = bf16emu.convert(t, to="bf16")
    assert torch.equal(bf16emu.convert(h.view(torch.int16), to="bf16", format="bf16"), h)


def test_quantize_mx_tensor():
    torch = pytest.importorskip("torch")
    x = torch.randn(4, 64)
    s, e, f = bf16emu.quantize_mx(x, "e2m1")
    assert isinstance(s, torch.Tensor) and isinstance(e, torch.Tensor) and s.dtype == e.dtype == torch.uint8
    s2, e2, f2 = bf16emu.quantize_mx(x.numpy(), "e2m1")
    assert np.array_equal(s.numpy(), s2) and np.array_equal(e.numpy(), e2) and f == f2
    assert np.array_equal(bf16emu.dequantize_mx(s, e, "e2m1"), bf16emu.dequantize_mx(s2, e2, "e2m1"))


def test_requires_grad_warns():
    torch = pytest.importorskip("torch")
    x = torch.ones(3, requires_grad=True)
    with pytest.warns(UserWarning, match="requires grad"):
        y = bf16emu.convert(x, to="bf16")
    assert not y.requires_grad
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        bf16emu.convert(x.detach(), to="bf16")


def test_finfo_against_torch():
    torch = pytest.importorskip("torch")
    for fmt, dt in (("bf16", torch.bfloat16), ("fp16", torch.float16), ("fp32", torch.float32),
                    ("fp64", torch.float64)):
        f, t = bf16emu.finfo(fmt), torch.finfo(dt)
        assert (f.bits, f.max, f.min, f.tiny, f.smallest_normal, f.eps) == (t.bits, t.max, t.min, t.tiny,
                                                                             t.smallest_normal, t.eps), fmt
        assert f.has_inf and f.has_nan and f.values is None


# From the format definitions: OCP OFP8 (e4m3: max 448, e5m2: 57344), OCP MX v1.0 (fp6 e2m3:
# max 7.5, e3m2: 28; fp4 e2m1: 6), NVIDIA tf32 (fp32's range, 10 fraction bits).
DEFINED = {
    #        bits e  m  bias  max       tiny     subnormal eps     inf    nan
    "e4m3": (8, 4, 3, 7, 448.0, 2.0**-6, 2.0**-9, 2.0**-3, False, True),
    "e5m2": (8, 5, 2, 15, 57344.0, 2.0**-14, 2.0**-16, 2.0**-2, True, True),
    "e2m3": (6, 2, 3, 1, 7.5, 1.0, 0.125, 0.125, False, False),
    "e3m2": (6, 3, 2, 3, 28.0, 0.25, 0.0625, 0.25, False, False),
    "e2m1": (4, 2, 1, 1, 6.0, 1.0, 0.5, 0.5, False, False),
    "tf32": (19, 8, 10, 127, (2 - 2.0**-10) * 2.0**127, 2.0**-126, 2.0**-136, 2.0**-10, True, True),
}


@pytest.mark.parametrize("fmt", sorted(DEFINED))
def test_finfo_from_definitions(fmt):
    f = bf16emu.finfo(fmt)
    got = (f.bits, f.exponent_bits, f.mantissa_bits, f.bias, f.max, f.tiny, f.smallest_subnormal, f.eps,
           f.has_inf, f.has_nan)
    assert got == DEFINED[fmt]
    assert f.min == -f.max and f.smallest_normal == f.tiny
    if fmt in SMALL:
        e, m, enc = SMALL[fmt]
        want = np.array([decode(c, e, m, enc) for c in range(1 << f.bits)])
        assert np.array_equal(np.isnan(f.values), np.isnan(want))
        assert np.array_equal(f.values[~np.isnan(want)], want[~np.isnan(want)])
        grid = sorted({v + 0.0 for v in want if math.isfinite(v)})
        assert f.grid.tolist() == grid and f.grid.max() == f.max
    else:
        assert f.values is None and f.grid is None


def test_finfo_grid_and_names():
    assert bf16emu.finfo("e2m1").grid.tolist() == [-6, -4, -3, -2, -1.5, -1, -0.5, 0, 0.5, 1, 1.5, 2, 3, 4, 6]
    assert len(bf16emu.finfo("float8_e4m3fn").grid) == 253  # 256 codes, 2 NaNs, +0 and -0 one value
    assert bf16emu.finfo("fp4").name == "e2m1"
    with pytest.raises(ValueError, match="unknown format"):
        bf16emu.finfo("e9m9")


def test_version():
    import re
    from pathlib import Path
    text = (Path(__file__).resolve().parents[2] / "CMakeLists.txt").read_text()
    assert bf16emu.__version__ == re.search(r"project\(bf16emu VERSION ([0-9.]+)", text)[1]


def test_docstring_examples():
    """Every public function carries an example, and every example holds."""
    import doctest
    public = [getattr(bf16emu, n) for n in bf16emu.__all__ if n != "__version__"]
    finder = doctest.DocTestFinder()
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    missing = []
    for obj in public:
        tests = [t for t in finder.find(obj, obj.__name__, globs={"np": np, "bf16emu": bf16emu}) if t.examples]
        if not tests:
            missing.append(obj.__name__)
        for t in tests:
            runner.run(t)
    assert not missing, f"public functions without an example: {missing}"
    assert runner.failures == 0 and runner.tries > 30


def test_torch_docstring_examples():
    torch = pytest.importorskip("torch")
    import doctest
    import bf16emu.torch as et
    torch.manual_seed(0)
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    missing = []
    for name in et.__all__:
        obj = getattr(et, name)
        tests = [t for t in doctest.DocTestFinder().find(obj, name, globs={"torch": torch, "et": et}) if t.examples]
        if not tests and name != "Emulated":  # Emulated: what emulate() returns (its example)
            missing.append(name)
        for t in tests:
            runner.run(t)
    assert not missing, f"public functions without an example: {missing}"
    assert runner.failures == 0 and runner.tries >= 10


def test_stubs_cover_the_public_names():
    import ast
    from pathlib import Path
    here = Path(bf16emu.__file__).resolve().parent
    assert (here / "py.typed").exists()
    for stub, names in (("__init__.pyi", bf16emu.__all__), ("torch.pyi", None)):
        tree = ast.parse((here / stub).read_text())
        defined = {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
        defined |= {t.id for n in ast.walk(tree) if isinstance(n, (ast.Assign, ast.AnnAssign))
                    for t in (n.targets if isinstance(n, ast.Assign) else [n.target]) if isinstance(t, ast.Name)}
        if names is None:
            names = ["attention", "linear", "matmul", "emulate", "Emulated", "scaled_dot_product_attention"]
        assert not set(names) - defined, (stub, set(names) - defined)


def test_warnings_point_at_the_caller():
    with pytest.warns(DeprecationWarning) as rec:
        bf16emu.add(np.float32([1]), np.float32([2]), legacy_tuple=True)
    assert rec[0].filename == __file__
    with pytest.warns(DeprecationWarning) as rec:
        bf16emu.convert(np.float32([1]), to="bf16", legacy_tuple=True)
    assert rec[0].filename == __file__
    torch = pytest.importorskip("torch")
    with pytest.warns(UserWarning) as rec:
        bf16emu.mul(torch.ones(2, requires_grad=True), torch.ones(2))
    assert rec[0].filename == __file__
