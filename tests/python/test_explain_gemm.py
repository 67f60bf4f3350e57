"""explain_gemm (issue 34, item 7) and gemm's split-k / order options.

For every member of the GEMM family on three engines (the sm80 and sm90 bf16 mma.sync presets
and plain IEEE fp32 multiply-add), with D in fp32 and in bf16, the test builds the member's GEMM
itself: each slice's dot product by the per-dot preset path (bf16emu.gemm with its default
options, one call per slice, the C of the slice given by hand) or by NumPy float32 arithmetic
(IEEE, nearest even), the partials rounded, ordered and added here with NumPy float32 and the
textbook fp32 -> bf16 bit trick (a float32 sum of two bf16 values rounded to bf16 is the
correctly rounded bf16 sum: 24 >= 2 * 8 + 2). Nothing expected comes from the family code. Then
bf16emu.gemm(split_k=..., ...) must give those bits, and explain_gemm must list the member among
the members reproducing every element (members that coincide on the data are all listed; the
test accepts any order among them). A 1-ulp perturbation is explained with its block trace.
"""

from fractions import Fraction

import numpy as np
import pytest

import bf16emu

M, N, K = 8, 8, 72


def rne_bf16(x32):
    u = np.asarray(x32, np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def bf16_value(bits):
    return (np.asarray(bits, np.uint16).astype(np.uint32) << 16).view(np.float32)


def round_to(fmt, x32):
    return x32 if fmt == "fp32" else bf16_value(rne_bf16(x32))


def add_in(fmt, x, y):
    return round_to(fmt, (x + y).astype(np.float32))


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(34)
    # Mixed magnitudes (exponents -6 .. 6) so that alignment, truncation and the partial
    # roundings differ between members.
    a32 = (rng.standard_normal((M, K)) * 2.0 ** rng.integers(-6, 7, (M, K))).astype(np.float32)
    b32 = (rng.standard_normal((K, N)) * 2.0 ** rng.integers(-6, 7, (K, N))).astype(np.float32)
    a, b = rne_bf16(a32), rne_bf16(b32)
    c = (rng.standard_normal((M, N)) * 4).astype(np.float32)
    return a, b, c


def slice_dot(engine, a, b, c_slice, k0, n):
    """One slice's dot products (M x N, float32 values) with the slice's starting C."""
    asl, bsl = np.ascontiguousarray(a[:, k0:k0 + n]), np.ascontiguousarray(b[k0:k0 + n, :])
    if engine == "ieee-mul-add":
        acc = c_slice.copy()
        av, bv = bf16_value(asl), bf16_value(bsl)
        for k in range(n):
            acc = (acc + (av[:, k:k + 1] * bv[k:k + 1, :]).astype(np.float32)).astype(np.float32)
        return acc
    return np.asarray(bf16emu.gemm(asl, bsl, c_slice, a_format="bf16", arch=engine), np.float32)


def build(engine, a, b, c, d_fmt, slice_len, order, pf, c_entry):
    count = -(-K // slice_len)
    zero = np.zeros((M, N), np.float32)
    parts = []
    for s in range(count):
        k0 = s * slice_len
        c0 = c if (c_entry == "first" and s == 0) else zero
        parts.append(round_to(pf, slice_dot(engine, a, b, c0, k0, min(slice_len, K - k0))))
    if order == "sequential" or count < 3:
        total = parts[0]
        for p in parts[1:]:
            total = add_in(pf, total, p)
    else:
        level = parts
        while len(level) > 1:
            nxt = [add_in(pf, level[i], level[i + 1]) for i in range(0, len(level) - 1, 2)]
            if len(level) % 2:
                nxt.append(level[-1])
            level = nxt
        total = level[0]
    if c_entry == "end":
        total = add_in(pf, total, round_to(pf, c))
    return total if d_fmt == "fp32" else rne_bf16(total)


# (split_k, slice): K = 72; the preset's k is 16, so split 2 has the plain slice of 36 and the
# one rounded up to the instruction's k, 48; 3 and 4 slices have only the plain one (24, 18).
SPLITS = [(1, 72), (2, 36), (2, 48), (3, 24), (4, 18)]
ENGINES = ["sm80", "sm90", "ieee-mul-add"]


def family_members():
    out = []
    for engine in ENGINES:
        for d_fmt in ("fp32", "bf16"):
            for split_k, slice_len in SPLITS:
                if engine == "ieee-mul-add" and slice_len == 48:
                    continue  # slices rounded to an instruction's k: tensor-core members only
                for c_entry in ("first", "end"):
                    for order in (("sequential", "pairwise") if split_k >= 4 else ("sequential",)):
                        for pf in (("fp32", d_fmt) if d_fmt != "fp32" else ("fp32",)):
                            if split_k == 1 and c_entry == "first" and pf != "fp32":
                                continue  # the same member as fp32 partials
                            out.append((engine, d_fmt, split_k, slice_len, order, pf, c_entry))
    return out


MEMBERS = family_members()


def same_member(m, engine, split_k, slice_len, order, pf, c_entry):
    if engine.startswith("ieee"):
        ok_engine = m["engine"] in ("ieee-fma", "ieee-mul-add")  # same arithmetic on bf16 products
    else:
        ok_engine = m["engine"] == "preset" and any(s.startswith(engine + " ") for s in m["same_arithmetic"])
    return (ok_engine and m["split_k"] == split_k and m["slice"] == slice_len and m["order"] == order
            and m["partial_format"] == pf and m["c_entry"] == c_entry)


def test_every_member_is_listed_by_the_test():
    assert len(MEMBERS) == 3 * 35 - 6  # 35 per engine; the IEEE engine has no 48-slice (2 + 4)


@pytest.mark.parametrize("member", MEMBERS, ids=lambda m: "-".join(str(v) for v in m))
def test_member_built_by_hand_is_named(data, member):
    engine, d_fmt, split_k, slice_len, order, pf, c_entry = member
    a, b, c = data
    want = build(engine, a, b, c, d_fmt, slice_len, order, pf, c_entry)
    got = bf16emu.gemm(a, b, c, a_format="bf16", arch=engine, split_k=split_k, slice=slice_len, order=order,
                       partial_format=pf, c_entry=c_entry, out_format=d_fmt)
    assert np.asarray(got).view(np.uint32 if d_fmt == "fp32" else np.uint16).tolist() == \
        np.asarray(want).view(np.uint32 if d_fmt == "fp32" else np.uint16).tolist()
    e = bf16emu.explain_gemm(a, b, want, c=c, a_format="bf16", result_format=d_fmt)
    assert e.match is not None, str(e)
    assert any(same_member(m, engine, split_k, slice_len, order, pf, c_entry) for m in e.matches), str(e)
    if d_fmt == "fp32":
        # The data tells most members apart: a handful reproduce every element, not the family.
        assert len(e.matches) <= e.members // 10, str(e)
    elif pf == "bf16":
        # Partials rounded to bf16 are told apart from fp32 partials.
        assert all(m["partial_format"] == "bf16" for m in e.matches), str(e)
    assert e.mismatch is None and e.first_unexplained is None


def test_members_differ_on_this_data(data):
    """Guard against a vacuous family: different members really give different bits here."""
    a, b, c = data
    seen = set()
    for engine in ENGINES:
        for split_k, order in ((1, "sequential"), (4, "sequential"), (4, "pairwise")):
            d = bf16emu.gemm(a, b, c, a_format="bf16", arch=engine, split_k=split_k, order=order)
            seen.add(np.asarray(d).tobytes())
    assert len(seen) == 9


def test_split_1_is_the_plain_gemm(data):
    a, b, c = data
    for arch in ("sm80", "sm90", "sm100"):
        plain = bf16emu.gemm(a, b, c, a_format="bf16", arch=arch)
        fam = bf16emu.gemm(a, b, c, a_format="bf16", arch=arch, split_k=1, order="sequential", c_entry="first",
                           out_format="fp32")
        assert np.asarray(plain).tobytes() == np.asarray(fam).tobytes()


def round_f32_exact(x: Fraction) -> np.float32:
    """A Fraction rounded to binary32, nearest even (normal range)."""
    if x == 0:
        return np.float32(0.0)
    sign, x = (-1 if x < 0 else 1), abs(x)
    e = x.numerator.bit_length() - x.denominator.bit_length()
    if Fraction(2) ** e > x:
        e -= 1
    scaled = x / Fraction(2) ** (e - 23)  # in [2^23, 2^24)
    q, r = divmod(scaled.numerator, scaled.denominator)
    if 2 * r > scaled.denominator or (2 * r == scaled.denominator and q % 2):
        q += 1
    return np.float32(sign * float(Fraction(q) * Fraction(2) ** (e - 23)))


def test_fp32_inputs_tell_fma_from_multiply_add():
    """With fp32 inputs a product is not exact in fp32: ieee-fma and ieee-mul-add differ, and the
    references here are exact rational arithmetic rounded once per step."""
    rng = np.random.default_rng(7)
    a = rng.standard_normal((4, 16)).astype(np.float32)
    b = rng.standard_normal((16, 4)).astype(np.float32)
    fma = np.zeros((4, 4), np.float32)
    mad = np.zeros((4, 4), np.float32)
    for i in range(4):
        for j in range(4):
            f = m = np.float32(0)
            for k in range(16):
                p = Fraction(float(a[i, k])) * Fraction(float(b[k, j]))
                f = round_f32_exact(Fraction(float(f)) + p)
                m = round_f32_exact(Fraction(float(m)) + Fraction(float(round_f32_exact(p))))
            fma[i, j], mad[i, j] = f, m
    assert fma.tobytes() != mad.tobytes()
    for want, name in ((fma, "ieee-fma"), (mad, "ieee-mul-add")):
        assert np.asarray(bf16emu.gemm(a, b, arch=name)).tobytes() == want.tobytes()
        e = bf16emu.explain_gemm(a, b, want)
        assert e.match is not None and e.match["engine"] == name and e.match["split_k"] == 1, str(e)


def test_one_ulp_off_is_explained_with_its_trace(data, tmp_path):
    a, b, c = data
    want = build("sm90", a, b, c, "fp32", 36, "sequential", "fp32", "first")
    bad = want.copy()
    bad.view(np.uint32)[3, 5] += 1
    # .npy paths work as well as arrays
    np.save(tmp_path / "a.npy", a), np.save(tmp_path / "b.npy", b), np.save(tmp_path / "c.npy", c)
    np.save(tmp_path / "d.npy", bad)
    e = bf16emu.explain_gemm(str(tmp_path / "a.npy"), tmp_path / "b.npy", str(tmp_path / "d.npy"),
                             c=str(tmp_path / "c.npy"), a_format="bf16")
    assert e.match is None
    best = e.ranking[0]
    assert best["mismatches"] == 1 and best["split_k"] == 2 and best["slice"] == 36, str(e)
    assert any(s.startswith("sm90 ") for s in best["same_arithmetic"])
    mm = e.mismatch
    assert mm["element"] == (3, 5)
    assert mm["member_bits"] == int(want.view(np.uint32)[3, 5]) and mm["result_bits"] == mm["member_bits"] + 1
    assert len(mm["partials"]) == 2
    # sm90 bf16: blocks of 16 products; slices of 36 padded to 48: 3 blocks per slice
    assert [(blk["slice"], blk["k0"]) for blk in mm["blocks"]] == [(0, 0), (0, 16), (0, 32), (1, 36), (1, 52),
                                                                   (1, 68)]
    assert mm["blocks"][-1]["d_bits"] == mm["partials"][1]
    text = str(e)
    assert "no member reproduces" in text and "(3, 5)" in text and "slice 1 block 2" in text
    if e.first_unexplained is not None:
        assert e.first_unexplained == (3, 5)


def test_bad_arguments(data):
    a, b, c = data
    with pytest.raises(ValueError, match="order"):
        bf16emu.gemm(a, b, a_format="bf16", order="random")
    with pytest.raises(ValueError, match="split_k"):
        bf16emu.gemm(a, b, a_format="bf16", split_k=0)
    with pytest.raises(ValueError, match="c_entry"):
        bf16emu.gemm(a, b, a_format="bf16", c_entry="middle")
    with pytest.raises(ValueError, match="shape"):
        bf16emu.explain_gemm(a, b, np.zeros((2, 2), np.float32), a_format="bf16")
    with pytest.raises(ValueError, match="npy"):
        bf16emu.explain_gemm("/nonexistent/a.npy", b, c, a_format="bf16")
