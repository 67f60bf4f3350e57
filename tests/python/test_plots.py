"""bf16emu.plot (docs/python.md, "Pictures"): each picture renders a PNG, and what it draws is
checked against values built here by hand (ulp offsets put into the bit patterns, a hand-written
ledger, the e4m3 grid decoded from the OCP OFP8 definition, a tensor-core block whose alignment
follows from the bf16 product widths). The drawing tests skip without matplotlib
(python3-matplotlib); the import and the error message are checked without it too.
"""
import doctest
import math
import struct
import subprocess
import sys
import warnings

import numpy as np
import pytest

import bf16emu
import bf16emu.plot as bp

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@pytest.fixture
def mpl():
    return pytest.importorskip("matplotlib", reason="matplotlib is not installed (apt-get install python3-matplotlib)")


def check_png(path, fig):
    data = path.read_bytes()
    assert data[:8] == PNG_SIGNATURE
    assert len(data) > 5000, len(data)
    assert data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    w_in, h_in = fig.get_size_inches()
    assert (width, height) == (round(w_in * 100), round(h_in * 100))
    assert 300 <= width <= 3000 and 200 <= height <= 3000


def gid_patches(ax, prefix):
    return [p for p in ax.patches if (p.get_gid() or "").startswith(prefix)]


# ---------------------------------------------------------------------------
# compare(): histogram and error map.

OFFSETS = {1: 37, -1: 20, 3: 5, -100: 2, 600: 1}  # ulps added to the bit patterns, and how often
# Buckets: 0, ±1, ±2, then ±2^j holding (2^(j-1), 2^j]: 3 -> 4, 100 -> 128, 600 -> 1024.
HISTOGRAM = {"-128": 2, "-1": 20, "1": 37, "4": 5, "1024": 1, "NaN": 1}


def offset_pair():
    rng = np.random.default_rng(5)
    shape = (24, 40)
    expected = bf16emu.convert(rng.uniform(1.0, 100.0, shape).astype(np.float32), to="bf16")
    offs = np.zeros(expected.size, np.int64)
    pos = rng.permutation(expected.size)
    at = 0
    for off, n in OFFSETS.items():
        offs[pos[at:at + n]] = off
        at += n
    nan_at = int(pos[at])
    # Positive finite bf16 values: pattern + k is k ulps above (no zero, infinity or NaN is crossed).
    actual = (expected.reshape(-1).astype(np.int64) + offs).astype(np.uint16)
    actual[nan_at] = 0x7FC0
    return actual.reshape(shape), expected, offs.reshape(shape), nan_at


def test_comparison_plot(mpl, tmp_path):
    actual, expected, offs, nan_at = offset_pair()
    c = bf16emu.compare(actual, expected, format="bf16")
    fig = c.plot(tmp_path / "c.png")
    check_png(tmp_path / "c.png", fig)
    ax = fig.axes[0]
    bars = gid_patches(ax, "hist")
    labels = [t.get_text() for t in ax.get_xticklabels()]
    got = {lab: int(b.get_height()) for lab, b in zip(labels, bars)}
    want = dict(HISTOGRAM, **{"0": actual.size - sum(HISTOGRAM.values())})
    assert got == want
    assert sum(got.values()) == c.count == actual.size
    assert ax.get_yscale() == "log"
    # The error map: every element's signed ulp distance; the NaN element masked (drawn black).
    im = next(a for a in fig.axes[1].images if a.get_gid() == "error_map")
    data = im.get_array()
    assert data.shape == (24, 40)
    assert data.mask.reshape(-1).nonzero()[0].tolist() == [nan_at]
    want_map = offs.astype(np.float64).reshape(-1)
    keep = np.arange(want_map.size) != nan_at
    assert np.array_equal(np.asarray(data).reshape(-1)[keep], want_map[keep])
    norm = im.norm
    assert norm.vmin == -norm.vmax and norm(0.0) == pytest.approx(0.5)  # zero in the middle
    assert norm.vmax == 600


def test_comparison_plot_other_shapes(mpl, tmp_path):
    actual, expected, _, _ = offset_pair()
    # 1-d: a near-square grid (960 -> 31 columns, 31 rows, the last one padded).
    c1 = bf16emu.compare(actual.reshape(-1), expected.reshape(-1), format="bf16")
    fig = bp.comparison(c1, tmp_path / "flat.png")
    check_png(tmp_path / "flat.png", fig)
    im = next(a for a in fig.axes[1].images if a.get_gid() == "error_map")
    assert im.get_array().shape == (math.ceil(960 / 31), 31)
    # 3-d: rows are the leading axes flattened; shape= picks another view.
    c3 = bf16emu.compare(actual.reshape(4, 6, 40), expected.reshape(4, 6, 40), format="bf16")
    fig = bp.comparison(c3, shape=(40, 24))
    im = next(a for a in fig.axes[1].images if a.get_gid() == "error_map")
    assert im.get_array().shape == (40, 24)
    assert next(a for a in bp.comparison(c3).axes[1].images).get_array().shape == (24, 40)
    # One element: the histogram alone.
    one = bf16emu.compare(np.uint16([0x3F80]), np.uint16([0x3F81]), format="bf16")
    fig = one.plot()
    assert len(fig.axes) == 1 and [int(b.get_height()) for b in gid_patches(fig.axes[0], "hist")] == [1]


# ---------------------------------------------------------------------------
# attention ledger.

HAND_LEDGER = {"sites": {
    "qk": {"count": 100, "positive": 30, "negative": 50, "zero": 20, "mean": -0.001, "sum_abs": 0.5},
    "unused": {"count": 0, "positive": 0, "negative": 0, "zero": 0, "mean": 0.0, "sum_abs": 0.0},
    "exp": {"count": 50, "positive": 50, "negative": 0, "zero": 0, "mean": 4e-6, "sum_abs": 2e-4},
    "pv": {"count": 8, "positive": 0, "negative": 0, "zero": 8, "mean": 0.0, "sum_abs": 0.0},
}}


def test_ledger_plot_hand_values(mpl, tmp_path):
    fig = bp.ledger(HAND_LEDGER, tmp_path / "l.png")
    check_png(tmp_path / "l.png", fig)
    a1, a2, a3 = fig.axes[:3]
    assert [t.get_text() for t in a3.get_xticklabels()] == ["qk", "exp", "pv"]  # count 0: left out
    heights = [b.get_height() for b in gid_patches(a1, "mean_abs")]
    assert heights == pytest.approx([0.005, 4e-6, 0.0])  # sum_abs / count
    assert a1.get_yscale() == "log"
    # bias: signed mean / mean |error|: -0.001 / 0.005, 4e-6 / 4e-6, and 0 for an exact site
    assert [b.get_height() for b in gid_patches(a2, "bias")] == pytest.approx([-0.2, 1.0, 0.0])
    assert [b.get_height() for b in gid_patches(a3, "up")] == pytest.approx([0.3, 1.0, 0.0])
    assert [b.get_height() for b in gid_patches(a3, "down")] == pytest.approx([0.5, 0.0, 0.0])
    assert [b.get_height() for b in gid_patches(a3, "exact")] == pytest.approx([0.2, 0.0, 1.0])
    assert [b.get_y() for b in gid_patches(a3, "exact")] == pytest.approx([0.8, 1.0, 0.0])  # stacked


def test_ledger_plot_of_an_attention(mpl, tmp_path):
    q = np.random.default_rng(1).standard_normal((1, 2, 16, 8))
    r = bf16emu.attention(q, q, q, policy="paper:autocast", causal=True)
    sites = [k for k, v in r["ledger"]["sites"].items() if v["count"] > 0]
    fig = bp.ledger(r, tmp_path / "a.png")
    check_png(tmp_path / "a.png", fig)
    assert [t.get_text() for t in fig.axes[2].get_xticklabels()] == sites
    assert len(gid_patches(fig.axes[0], "mean_abs")) == len(sites) >= 5
    assert [t.get_text() for t in bp.ledger(r["ledger"]).axes[2].get_xticklabels()] == sites  # the ledger alone
    with pytest.raises(TypeError, match="result"):
        bp.ledger({"o": 1})


# ---------------------------------------------------------------------------
# format grid.


def e4m3_positive_values():
    """OCP OFP8 E4M3: bias 7, 3 fraction bits, no infinities, S.1111.111 the only NaN."""
    vals = []
    for code in range(0x01, 0x80):
        e, f = code >> 3, code & 7
        if e == 15 and f == 7:
            continue  # NaN
        vals.append(math.ldexp(f / 8, -6) if e == 0 else math.ldexp(1 + f / 8, e - 7))
    return vals


def test_format_plot_e4m3(mpl, tmp_path):
    want = e4m3_positive_values()
    assert len(want) == 126 and max(want) == 448.0
    fig = bp.format("e4m3", tmp_path / "e4m3.png")
    check_png(tmp_path / "e4m3.png", fig)
    ax = fig.axes[0]
    coll = {c.get_gid(): c.get_offsets()[:, 0].tolist() for c in ax.collections}
    assert len(coll["subnormal"]) == 7 and len(coll["normal"]) == 119
    assert sorted(coll["subnormal"] + coll["normal"]) == sorted(want)
    assert coll["max"] == [448.0]
    assert max(coll["subnormal"]) < 2.0 ** -6 <= min(coll["normal"])
    # The spacing line (log2): 2^-9 over the subnormals, 2^(e-3) in binade e.
    line = next(l for l in fig.axes[1].lines if l.get_gid() == "ulp")
    x, y = line.get_xdata(), line.get_ydata()
    assert y[0] == -9 and x[0] == -9 and x[-1] == pytest.approx(math.log2(448))
    at = {round(float(a)): float(b) for a, b in zip(x[::2], y[::2])}  # left edge of each step
    assert all(at[e] == e - 3 for e in range(-6, 9))


def test_format_plot_wide(mpl, tmp_path):
    fig = bp.format("bf16", tmp_path / "bf16.png")
    check_png(tmp_path / "bf16.png", fig)
    # Three binades of bf16 (7 fraction bits: 128 values each), every 8th value drawn: the tick
    # spacing is 8 ulps, 8 * 2^(e-7), doubling per binade.
    for e in range(3):
        xs = np.sort(next(c for c in fig.axes[0].collections if c.get_gid() == f"binade:{e}").get_segments(),
                     axis=0)[:, 0, 0]
        assert len(xs) == 16 and xs[0] == 2.0 ** e
        assert np.all(np.diff(xs) == 8 * 2.0 ** (e - 7))
    # fp64 draws without overflow warnings (its max is within a factor 2 of the largest double).
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        bp.format("fp64", tmp_path / "fp64.png")
    check_png(tmp_path / "fp64.png", bp.format("fp64"))


# ---------------------------------------------------------------------------
# tensor-core block.


def test_block_plot(mpl, tmp_path):
    # Row 0 of A: 1, 2^-20, 2^-30, 1.5 and zeros; B all ones. sm80 bf16 mma: blocks of 8 products,
    # alignment window F (24 on sm80). Block max exponent 0, block lsb 2^-F. A bf16 product's
    # exact significand has 2 x 8 bits, its last bit 2^(exp - 14): p0 (exp 0) keeps all;
    # p1 (2^-20: bits 2^-20 .. 2^-34) keeps the top, truncates [2^-34, 2^-F); p2 (2^-30) lies
    # wholly below and is lost (2^-30); p3 (1.5, exp 0) keeps all; p4..p7 and C are zero.
    row = [1.0, 2.0 ** -20, 2.0 ** -30, 1.5] + [0.0] * 12
    a = bf16emu.convert(np.float32([row] * 16), to="bf16")
    b = bf16emu.convert(np.ones((16, 8), np.float32), to="bf16")
    d, tr = bf16emu.mma(a, b, a_format="bf16", arch="sm80", trace=(0, 0))
    F = tr["alignment_bits"]
    assert tr["block_size"] == 8 and F > 20
    fig = bp.block(tr, tmp_path / "b.png")
    check_png(tmp_path / "b.png", fig)
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert len(labels) == 8 + 1 and labels[0] == "C" and labels[-1] == "p0"  # one row per product, and C
    gids = sorted(p.get_gid() for p in ax.patches if p.get_gid())
    assert gids == ["kept:0", "kept:1", "kept:3", "truncated:1", "truncated:2"]
    rect = {p.get_gid(): p for p in ax.patches if p.get_gid()}
    assert (rect["truncated:1"].get_x(), rect["truncated:1"].get_width()) == (-34, 34 - F)
    assert (rect["truncated:2"].get_x(), rect["truncated:2"].get_width()) == (-44, 15)
    assert (rect["kept:0"].get_x(), rect["kept:0"].get_width()) == (-14, 15)
    assert (rect["kept:1"].get_x(), rect["kept:1"].get_width()) == (-F, F - 19)
    texts = [t.get_text() for t in ax.texts]
    assert f"lost {2.0 ** -30:.3g}" in texts and "lost 0" in texts  # p1's truncated bits are zeros
    # The second block (k 8..15): all products zero, C is the first block's result (2.5 + 2^-20).
    fig2 = bp.block(tr, block=1)
    assert sorted(p.get_gid() for p in fig2.axes[0].patches if p.get_gid()) == ["kept:C"]
    with pytest.raises(ValueError, match="block"):
        bp.block(tr, block=2)
    assert bp.block(tr["blocks"][0]).axes[0].get_yticklabels()[0].get_text() == "C"  # a block dict alone


# ---------------------------------------------------------------------------
# examples, and the package without matplotlib.


def test_docstring_examples(mpl):
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    found = 0
    for name in bp.__all__:
        for t in doctest.DocTestFinder().find(getattr(bp, name), name, globs={"np": np, "bf16emu": bf16emu}):
            if t.examples:
                found += 1
                runner.run(t)
    assert found == len(bp.__all__) and runner.failures == 0


def test_without_matplotlib(monkeypatch):
    for mod in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")] + ["matplotlib"]:
        monkeypatch.setitem(sys.modules, mod, None)  # import raises ImportError
    with pytest.raises(ImportError, match="python3-matplotlib"):
        bp.format("e4m3")
    c = bf16emu.compare(np.uint16([1]), np.uint16([1]), format="bf16")
    with pytest.raises(ImportError, match="python3-matplotlib"):
        c.plot()
    with pytest.raises(ImportError, match="python3-matplotlib"):
        bp.ledger(HAND_LEDGER)
    with pytest.raises(ImportError, match="python3-matplotlib"):
        bp.block({"terms": []})
    code = "import sys, bf16emu, bf16emu.plot; assert 'matplotlib' not in sys.modules, 'imported matplotlib'"
    subprocess.run([sys.executable, "-c", code], check=True)


# --- issue 46: arguments checked before drawing (these run without matplotlib too) -----------

def _cmp():
    return bf16emu.compare(np.uint16([0x3F80, 0x4001]), np.uint16([0x3F80, 0x4000]), format="bf16")


def _ledger_dict():
    site = {"count": 4, "sum_abs": 1e-3, "mean": 1e-4, "positive": 2, "negative": 1, "zero": 1}
    return {"sites": {"qk": site}}


@pytest.mark.parametrize("path", [42, 4.5, b"x.png", ["x.png"]])
def test_plot_path_of_the_wrong_type(path):
    for call in (lambda: bp.comparison(_cmp(), path), lambda: bp.ledger(_ledger_dict(), path),
                 lambda: bp.format("e2m1", path)):
        with pytest.raises(TypeError, match="argument 'path'"):
            call()


def test_plot_path_in_a_missing_folder_is_named(tmp_path):
    bad = tmp_path / "no such folder" / "c.png"
    with pytest.raises(ValueError, match="argument 'path'.*no such folder"):
        bp.comparison(_cmp(), bad)
    with pytest.raises(ValueError, match="argument 'path'.*is a folder"):
        bp.format("e2m1", tmp_path)


def test_plot_of_an_empty_comparison():
    c = bf16emu.compare(np.zeros(0, np.uint16), np.zeros(0, np.uint16), format="bf16")
    with pytest.raises(ValueError, match="argument 'c': the comparison has no elements"):
        bp.comparison(c)
    with pytest.raises(TypeError, match="argument 'c'"):
        bp.comparison({"count": 2})


@pytest.mark.parametrize("broken", [
    {"sites": {"qk": {"count": 4}}},
    {"sites": {"qk": {"count": 4, "sum_abs": "x", "mean": 0, "positive": 1, "negative": 1, "zero": 2}}},
    {"sites": {"qk": 7}},
    {"sites": []},
])
def test_plot_of_a_malformed_ledger(broken):
    with pytest.raises((TypeError, ValueError), match="argument 'result'"):
        bp.ledger(broken)


@pytest.mark.parametrize("block", [1.7, "1", True, None])
def test_plot_block_index_is_an_integer(block):
    tr = {"blocks": [{"terms": []}, {"terms": []}]}
    with pytest.raises(TypeError, match="argument 'block'"):
        bp.block(tr, block=block)


def test_plot_write_errors_name_the_path(mpl, tmp_path):
    import os
    target = tmp_path / "ro"
    target.mkdir()
    os.chmod(target, 0o500)
    try:
        if os.access(target, os.W_OK):
            pytest.skip("running as root: a read-only folder is still writable")
        with pytest.raises(OSError, match="argument 'path': cannot write .*ro"):
            bp.format("e2m1", target / "f.png")
    finally:
        os.chmod(target, 0o700)
