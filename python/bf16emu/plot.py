"""Pictures of bf16emu's results (docs/python.md, "Pictures"), drawn with matplotlib.

matplotlib is optional: `import bf16emu` and `import bf16emu.plot` do not need it; each function
imports it when called and raises ImportError naming the package when it is missing. The
functions build a matplotlib Figure without pyplot (no global state, no display needed: no
backend is chosen), return it, and with path= also write it as a PNG.

    comparison(c)     the ulp histogram and the error map of bf16emu.compare()  (c.plot() calls it)
    ledger(r)         the attention error ledger per rounding site (bf16emu.attention(..., ledger=True))
    format(fmt)       a format's value grid and its spacing (bf16emu.finfo)
    block(trace)      a tensor-core block's alignment and truncation, per product (gemm/mma trace=)

Each drawn element of interest carries a gid ("hist", "kept:3", "truncated:C", ...), so tests
and users can find it in the figure.
"""

from __future__ import annotations

import math
import os
from typing import TYPE_CHECKING, Optional, Tuple, Union

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from ._compare import Comparison

Path = Union[str, "os.PathLike[str]"]

import numpy as np

__all__ = ["comparison", "ledger", "format", "block"]

_MISSING = ("bf16emu.plot needs matplotlib, which is not installed (Debian: apt-get install "
            "python3-matplotlib; elsewhere: pip install matplotlib)")


def _require() -> None:
    """Called first by every picture: the ImportError names the package to install."""
    try:
        import matplotlib  # noqa: F401
        import matplotlib.figure  # noqa: F401
    except ImportError as err:
        raise ImportError(_MISSING) from err


def _figure(width: float, height: float):
    from matplotlib.figure import Figure
    return Figure(figsize=(width, height), dpi=100, layout="constrained")


def _check_path(path) -> None:
    """path=: None or a file path (str or os.PathLike) whose folder exists; checked before any
    drawing (and without matplotlib), the error naming the argument and the path."""
    if path is None:
        return
    if isinstance(path, bytes) or not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"argument 'path' must be a file path (str or os.PathLike) or None, got "
                        f"{type(path).__name__}")
    p = os.fspath(path)
    if not isinstance(p, str) or not p:
        raise ValueError(f"argument 'path' must be a non-empty file path, got {p!r:.80}")
    folder = os.path.dirname(os.path.abspath(p))
    if os.path.isdir(p):
        raise ValueError(f"argument 'path': {p!r:.200} is a folder, not a file")
    if not os.path.isdir(folder):
        raise ValueError(f"argument 'path': the folder {folder!r:.200} of {p!r:.200} does not exist")


def _save(fig: Figure, path: Optional[Path]) -> Figure:
    if path is not None:
        try:
            fig.savefig(path, format="png", dpi=100)
        except OSError as err:
            raise OSError(err.errno, f"argument 'path': cannot write {os.fspath(path)!r:.200}: "
                                     f"{err.strerror or err}") from err
    return fig


# ---------------------------------------------------------------------------
# compare(): ulp histogram and error map.


def _signed_ulps(c):
    """(signed ulp distance actual - expected as float64 with NaN where exactly one side is NaN,
    shape c.shape). Both NaN: 0 (as compare counts them)."""
    from ._compare import ordered
    oa, na = ordered(c._a.reshape(-1), c.format)
    oe, ne = ordered(c._e.reshape(-1), c.format)
    d = np.where(na | ne, 0, oa - oe).astype(np.float64)
    d[na != ne] = np.nan
    return d.reshape(c.shape)


def comparison(c: Comparison, path: Optional[Path] = None, *, shape: Optional[Tuple[int, int]] = None,
               title: Optional[str] = None) -> Figure:
    """The ulp histogram (signed: actual - expected, log counts; buckets 0, ±1, ±2, then
    ±2^j holding the distances in (2^(j-1), 2^j]; 'NaN' where exactly one side is NaN) and,
    for results of at least 2 elements, the error map: the signed ulp distance of every
    element on a diverging color scale (symmetric-log, zero white, NaN-vs-number black).
    Arrays of more than 2 dimensions are drawn as (prod(shape[:-1]), shape[-1]); 1-d ones as
    a near-square grid; shape= chooses another 2-d view. Returns the Figure; path= writes a PNG.

    >>> c = bf16emu.compare(np.uint16([0x3F80, 0x4001]), np.uint16([0x3F80, 0x4000]), format="bf16")
    >>> fig = bf16emu.plot.comparison(c)          # or c.plot()
    >>> [int(b.get_height()) for b in fig.axes[0].patches]   # buckets 0 and +1
    [1, 1]
    """
    from ._compare import Comparison
    if not isinstance(c, Comparison):
        raise TypeError(f"argument 'c' must be the Comparison of bf16emu.compare(), got {type(c).__name__}")
    if c.count == 0:
        raise ValueError("argument 'c': the comparison has no elements; there is nothing to draw")
    if shape is not None:
        if (not isinstance(shape, (tuple, list)) or len(shape) != 2
                or not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in shape)):
            raise ValueError(f"argument 'shape' must be a pair of positive integers, got {str(shape)[:80]}")
    _check_path(path)
    _require()
    from matplotlib.colors import SymLogNorm

    d = _signed_ulps(c)
    flat = d.reshape(-1)
    nan = np.isnan(flat)
    finite = flat[~nan]
    mag = np.abs(finite)
    bucket = np.where(mag <= 1, mag, np.exp2(np.ceil(np.log2(np.maximum(mag, 1)))))
    bucket = np.where(finite < 0, -bucket, bucket).astype(np.int64)
    keys, counts = np.unique(bucket, return_counts=True)
    labels = [str(int(k)) for k in keys]
    heights = [int(n) for n in counts]
    if nan.any():
        labels.append("NaN")
        heights.append(int(nan.sum()))

    has_map = c.count >= 2
    fig = _figure(11 if has_map else 6, 4.2)
    axes = fig.subplots(1, 2, width_ratios=[1, 1.1]) if has_map else [fig.subplots()]
    ax = axes[0]
    tone = {"0": "#888888", "NaN": "black"}
    colors = [tone.get(lab, "#4393c3" if lab.startswith("-") else "#d6604d") for lab in labels]
    bars = ax.bar(range(len(labels)), heights, color=colors, edgecolor="black", linewidth=0.5)
    for b in bars:
        b.set_gid("hist")
    ax.set_xticks(range(len(labels)), labels, rotation=45 if len(labels) > 10 else 0, fontsize=8)
    ax.set_yscale("log")
    ax.set_ylim(0.5, max(heights) * 2.5)
    for i, h in enumerate(heights):
        ax.text(i, h * 1.15, str(h), ha="center", va="bottom", fontsize=7 if len(heights) <= 12 else 5)
    ax.set_xlabel("actual − expected (ulps; bucket ±k holds (k/2, k])")
    ax.set_ylabel("elements")
    ax.set_title(f"{c.format}: {c.mismatches} of {c.count} differ", fontsize=10)

    if has_map:
        if shape is not None:
            view = d.reshape(shape)
        elif d.ndim >= 2:
            view = d.reshape(-1, d.shape[-1])
        else:
            n = flat.size
            w = int(math.ceil(math.sqrt(n)))
            view = np.full(w * int(math.ceil(n / w)), np.inf)
            view[:n] = flat
            view = view.reshape(-1, w)
        if view.ndim != 2:
            raise ValueError(f"argument 'shape' must be 2-d, got {tuple(view.shape)}")
        pad = np.isinf(view)
        shown = np.ma.masked_array(np.where(pad, 0, view), mask=np.isnan(view) | pad)
        vmax = float(np.nanmax(np.abs(np.where(pad, 0, view)))) if np.isfinite(view).any() else 0.0
        vmax = max(vmax, 1.0)
        from matplotlib import colormaps
        cmap = colormaps["RdBu_r"].with_extremes(bad="black")
        ax2 = axes[1]
        im = ax2.imshow(shown, cmap=cmap, norm=SymLogNorm(linthresh=1, vmin=-vmax, vmax=vmax, base=2),
                        interpolation="nearest", aspect="auto")
        im.set_gid("error_map")
        if pad.any():  # the padding of a 1-d result: light grey, not an element
            ax2.imshow(np.ma.masked_array(np.zeros(view.shape), mask=~pad), cmap="Greys", vmin=0, vmax=4,
                       interpolation="nearest", aspect="auto")
        top = int(math.ceil(math.log2(vmax)))
        pows = [2 ** j for j in range(0, top + 1, max(1, math.ceil(top / 4)))]
        cb = fig.colorbar(im, ax=ax2, ticks=sorted([-p for p in pows] + [0] + pows))
        cb.ax.set_yticklabels([str(t) for t in sorted([-p for p in pows] + [0] + pows)])
        cb.set_label("actual − expected (ulps)")
        ax2.set_xlabel(f"column (of {view.shape[1]})")
        ax2.set_ylabel(f"row (of {view.shape[0]})")
        note = f"shape {c.shape}" + (f" shown as {view.shape}" if tuple(view.shape) != c.shape else "")
        ax2.set_title(f"error map, {note}" + ("; black: NaN vs number" if nan.any() else ""), fontsize=10)
    if title:
        fig.suptitle(title)
    return _save(fig, path)


# ---------------------------------------------------------------------------
# attention ledger: one bar per rounding site.


def _ledger_sites(result) -> dict:
    if isinstance(result, dict) and "ledger" in result and isinstance(result["ledger"], dict):
        result = result["ledger"]
    if not isinstance(result, dict) or not isinstance(result.get("sites"), dict):
        raise TypeError("argument 'result' must be bf16emu.attention(..., ledger=True)'s dict or its 'ledger' "
                        "(a dict with 'sites')")
    for name, site in result["sites"].items():
        if not isinstance(site, dict):
            raise TypeError(f"argument 'result': site {str(name)[:40]!r} is a {type(site).__name__}, not a dict")
        for key in ("count", "sum_abs", "mean", "positive", "negative", "zero"):
            v = site.get(key)
            if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
                raise ValueError(f"argument 'result': site {str(name)[:40]!r} has no number {key!r} (a ledger of "
                                 f"bf16emu.attention holds count, sum_abs, mean, positive, negative, zero per site)")
    return result["sites"]


def ledger(result: dict, path: Optional[Path] = None, *, title: Optional[str] = None) -> Figure:
    """The attention error ledger per rounding site: for every site that rounded something
    (count > 0), in the pipeline's order, three bar charts: the mean |error| per rounding
    (sum_abs / count, log scale); the bias, signed mean / mean |error| in [-1, 1] (+1: every
    rounding went up), with the signed mean written on the bar; and the share of roundings
    that went up, down or were exact. `result` is bf16emu.attention's dict or its 'ledger'
    (also bf16emu.torch.attention's ledger). Returns the Figure; path= writes a PNG.

    >>> q = np.random.default_rng(0).standard_normal((1, 1, 8, 4))
    >>> fig = bf16emu.plot.ledger(bf16emu.attention(q, q, q, policy="paper"))
    >>> [t.get_text() for t in fig.axes[2].get_xticklabels()][:3]
    ['input', 'qk', 'scale']
    """
    sites = {k: v for k, v in _ledger_sites(result).items() if int(v.get("count", 0)) > 0}
    _check_path(path)
    _require()
    names = list(sites)
    fig = _figure(max(7.0, 0.75 * len(names) + 2), 7.2)
    a1, a2, a3 = fig.subplots(3, 1, sharex=True)
    x = np.arange(len(names))
    count = np.array([sites[n]["count"] for n in names], dtype=np.float64)
    mean_abs = np.array([sites[n]["sum_abs"] for n in names], dtype=np.float64) / np.maximum(count, 1)
    mean = np.array([sites[n]["mean"] for n in names], dtype=np.float64)
    bias = np.divide(mean, mean_abs, out=np.zeros_like(mean), where=mean_abs > 0)

    shown = np.where(mean_abs > 0, mean_abs, np.nan)
    for b in a1.bar(x, np.nan_to_num(shown, nan=0.0), color="#4a7ab5"):
        b.set_gid("mean_abs")
    a1.set_yscale("log")
    for i in np.flatnonzero(mean_abs == 0):
        a1.text(i, 0.5, "exact", transform=a1.get_xaxis_transform(), ha="center", fontsize=8)
    a1.set_ylabel("mean |error|")
    a1.set_title(title or "attention error ledger, per rounding site", fontsize=10)

    for b in a2.bar(x, bias, color=np.where(bias >= 0, "#d6604d", "#4393c3")):
        b.set_gid("bias")
    a2.axhline(0, color="black", linewidth=0.6)
    a2.set_ylim(-1.15, 1.15)
    for i, (bi, m) in enumerate(zip(bias, mean)):
        a2.text(i, bi + (0.06 if bi >= 0 else -0.06), f"{m:.2g}", ha="center", va="bottom" if bi >= 0 else "top",
                fontsize=7)
    a2.set_ylabel("signed mean /\nmean |error|")

    frac = {k: np.array([sites[n][k] for n in names], dtype=np.float64) / count
            for k in ("positive", "negative", "zero")}
    bottom = np.zeros(len(names))
    for key, label, color in (("positive", "up", "#d6604d"), ("negative", "down", "#4393c3"),
                              ("zero", "exact", "#bbbbbb")):
        for b in a3.bar(x, frac[key], bottom=bottom, color=color, label=label):
            b.set_gid(label)
        bottom += frac[key]
    a3.set_ylim(0, 1)
    a3.set_ylabel("share of roundings")
    a3.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8)
    a3.set_xticks(x, names, rotation=30, ha="right", fontsize=8)
    for i, n in enumerate(count):
        a3.text(i, 1.01, f"{int(n)}", ha="center", va="bottom", fontsize=7, transform=a3.get_xaxis_transform())
    return _save(fig, path)


# ---------------------------------------------------------------------------
# format: the value grid.


def _binade_sketch(ax, f):
    """Three binades [1, 2), [2, 4), [4, 8) on a linear axis: the ticks are the format's values
    (every 2^(m-4)-th one when a binade holds more than 16), so the spacing doubles per binade."""
    m = f.mantissa_bits
    step = 1 if m <= 4 else 1 << (m - 4)
    per = (1 << m) // step
    for e in range(3):
        i = np.arange(per, dtype=np.float64) * step
        vals = (1.0 + i * f.eps) * 2.0 ** e
        ax.vlines(vals, 0, 1, color=("#4a7ab5", "#2f9e6e", "#b5544a")[e], linewidth=1.0, gid=f"binade:{e}")
        gap = "" if step == 1 else f"\nticks 2^{e - m + step.bit_length() - 1} apart"
        ax.text(2.0 ** e * 1.5, 1.05, f"[{2**e}, {2**(e+1)}): ulp 2^{e - m}{gap}", ha="center", va="bottom",
                fontsize=8)
        ax.axvline(2.0 ** e, color="black", linestyle="--", linewidth=0.8)
    ax.axvline(8.0, color="black", linestyle="--", linewidth=0.8)
    ax.set_xlim(0.9, 8.1)
    ax.set_ylim(0, 1.45)
    ax.set_yticks([])
    shown = "every value" if step == 1 else f"every {step}-th value of the 2^{m} per binade"
    ax.set_xlabel(f"value ({shown}); the spacing doubles at each power of two")


def format(fmt: str, path: Optional[Path] = None, *, title: Optional[str] = None) -> Figure:
    """A format's value grid, as bf16emu.finfo(fmt) gives it. For formats of at most 8 bits
    (fp8, fp6, fp4): every positive finite value on a log axis (subnormals and normals in two
    colours, the largest value marked, the binade boundaries 2^e dashed). For wider formats
    (bf16, fp16, tf32, fp32, fp64): a sketch of three binades [1, 8) showing the spacing double
    per binade. Below, for every format: the spacing to the next value (ulp) across the whole
    positive range, log-log: flat over the subnormals, doubling per binade up to max.
    Returns the Figure; path= writes a PNG.

    >>> fig = bf16emu.plot.format("e2m1")
    >>> sorted(float(x) for c in fig.axes[0].collections if c.get_gid() in ("subnormal", "normal")
    ...        for x in c.get_offsets()[:, 0])
    [0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]
    """
    from ._formats import finfo
    f = finfo(fmt)
    _check_path(path)
    _require()
    small = f.grid is not None
    fig = _figure(10, 5.6)
    top, bottom = fig.subplots(2, 1, height_ratios=[1, 1.3])
    head = (f"{f.name}: 1 sign, {f.exponent_bits} exponent, {f.mantissa_bits} fraction bits, bias {f.bias}; "
            f"max {f.max:.6g}, tiny 2^{f.emin}, smallest subnormal 2^{f.emin - f.mantissa_bits}; "
            + ("inf and NaN" if f.has_inf else "NaN, no inf" if f.has_nan else "no inf, no NaN"))
    if small:
        pos = f.grid[f.grid > 0]
        sub, norm = pos[pos < f.tiny], pos[pos >= f.tiny]
        if sub.size:
            top.scatter(sub, np.zeros(sub.size), marker="|", s=400, color="#e08214", gid="subnormal",
                        label=f"subnormal ({sub.size})")
        top.scatter(norm, np.zeros(norm.size), marker="|", s=400, color="#4a7ab5", gid="normal",
                    label=f"normal ({norm.size})")
        top.scatter([f.max], [0.35], marker="v", color="#b2182b", gid="max", label=f"max {f.max:g}")
        for e in range(f.emin, f.emax + 2):
            top.axvline(2.0 ** e, color="black", linestyle="--", linewidth=0.5, alpha=0.6)
        top.set_xscale("log", base=2)
        top.set_ylim(-0.5, 0.6)
        top.set_yticks([])
        top.legend(loc="upper left", fontsize=8, ncol=3)
        top.set_xlabel(f"value (log2): the {pos.size} positive finite values (±0 and negatives not shown); "
                       f"dashed: binade boundaries 2^e")
    else:
        _binade_sketch(top, f)

    # The spacing, in exponents (log2 on linear axes: fp64's 2^1024 edge overflows a log axis):
    # the subnormals step by the smallest subnormal, binade e by 2^(e - m).
    m, sub_e = f.mantissa_bits, f.emin - f.mantissa_bits
    es = np.arange(f.emin, f.emax + 1, dtype=np.float64)
    edges = np.concatenate([[sub_e], es, [math.log2(f.max)]])
    steps = np.concatenate([[sub_e], es - m])
    bottom.plot(np.repeat(edges, 2)[1:-1], np.repeat(steps, 2), color="#4a7ab5", linewidth=1.2, gid="ulp")
    bottom.axvspan(sub_e, f.emin, color="#e08214", alpha=0.15, label="subnormals: spacing 2^%d" % sub_e)
    bottom.axvline(f.emax + math.log2(f.max / math.ldexp(1.0, f.emax)), color="#b2182b", linewidth=0.8,
                   label=f"max {f.max:.4g}")
    bottom.set_xlabel("log2 of the value (binade e holds [2^e, 2^(e+1)))")
    bottom.set_ylabel("log2 of the spacing\nto the next value (ulp)")
    bottom.legend(loc="upper left", fontsize=8)
    fig.suptitle(title or head, fontsize=10)
    return _save(fig, path)


# ---------------------------------------------------------------------------
# tensor-core block: alignment and truncation per product.


def _one_block(trace, index: int):
    if isinstance(trace, dict) and "blocks" in trace:
        blocks = trace["blocks"]
        if not blocks:
            raise ValueError("argument 'trace' holds no blocks")
        if not 0 <= index < len(blocks):
            raise ValueError(f"argument 'block' = {index} is outside [0, {len(blocks)})")
        return blocks[index], trace
    if isinstance(trace, dict) and "terms" in trace:
        return trace, {}
    raise TypeError("argument 'trace' must be the trace of bf16emu.gemm/mma(..., trace=(i, j)) or one of its "
                    "'blocks'")


def block(trace: dict, path: Optional[Path] = None, *, block: int = 0, title: Optional[str] = None) -> Figure:
    """One tensor-core block of a gemm/mma trace (trace=(i, j)): one row per product and one
    for C. Each row is the term's significand, placed by bit weight relative to the block's
    largest exponent (0 = the weight 2^max_exp): solid the bits kept by the alignment, hatched
    the low bits that fell below the block's lsb 2^(max_exp - F) and were truncated, with the
    value they carried. The shaded band is the alignment window of F bits. Zero terms (padding
    included) are marked 0. `block` picks one of trace['blocks'] (default the first); a single
    block dict is taken as it is. Returns the Figure; path= writes a PNG.

    >>> a = bf16emu.convert(np.float32([[1.0, 2.0**-20] + [0.0] * 14] * 16), to="bf16")
    >>> b = bf16emu.convert(np.ones((16, 8), np.float32), to="bf16")
    >>> d, tr = bf16emu.mma(a, b, a_format="bf16", arch="sm80", trace=(0, 0))
    >>> fig = bf16emu.plot.block(tr)
    >>> sorted(p.get_gid() for p in fig.axes[0].patches if p.get_gid())
    ['kept:0', 'kept:1', 'truncated:1']
    """
    if isinstance(block, bool) or not isinstance(block, (int, np.integer)):
        raise TypeError(f"argument 'block' must be an integer, got {type(block).__name__}")
    blk, info = _one_block(trace, int(block))
    _check_path(path)
    _require()
    from matplotlib.patches import Rectangle

    terms = blk["terms"]
    n = int(blk["n_products"])
    emax, base = int(blk["max_exp"]), int(blk["lsb_exp"])
    F = emax - base
    rows = len(terms)  # n products + C
    fig = _figure(10, 1.2 + 0.32 * rows)
    ax = fig.subplots()
    lo, hi = -F - 2, 3
    ax.axvspan(-F, 1, color="#dddddd", alpha=0.6, zorder=0, label=f"alignment window (F = {F} bits)")
    labels = []
    for r, t in enumerate(terms):
        y = rows - 1 - r
        is_c = r == n
        key = "C" if is_c else str(r)
        labels.append("C" if is_c else f"p{r}" + (" pad" if r >= int(blk.get("n_real", n)) else ""))
        if blk.get("special"):
            continue
        if t["zero"]:
            ax.text(0.5, y, "0", ha="center", va="center", fontsize=7, color="#666666")
            continue
        exp, shift = int(t["exp"]), int(t["shift"])
        lsb = base - shift  # weight of the significand's last bit
        top = exp + 1  # the leading bit 2^exp occupies [exp, exp + 1)
        color = "#2f9e6e" if is_c else "#4a7ab5"
        if top > base:
            k0 = max(lsb, base)
            ax.add_patch(Rectangle((k0 - emax, y - 0.35), top - k0, 0.7, facecolor=color, edgecolor="black",
                                   linewidth=0.5, gid=f"kept:{key}"))
        if lsb < base:
            t1 = min(base, top)
            ax.add_patch(Rectangle((lsb - emax, y - 0.35), t1 - lsb, 0.7, facecolor="#f4a582", edgecolor="#b2182b",
                                   hatch="////", linewidth=0.5, gid=f"truncated:{key}"))
            lost = float(t["lost"])
            ax.text(lsb - emax - 0.5, y, f"lost {lost:.3g}" if lost else "lost 0", ha="right", va="center",
                    fontsize=7, color="#b2182b")
        lo, hi = min(lo, lsb - emax - 8), max(hi, top - emax + 1)
    ax.set_xlim(lo, hi)
    ax.set_ylim(-0.8, rows - 0.2)
    ax.set_yticks(range(rows), labels[::-1], fontsize=7)
    ax.axvline(-F, color="#b2182b", linewidth=0.8)
    ax.axvline(1, color="black", linewidth=0.8)
    ax.set_xlabel(f"bit weight relative to the block's largest exponent 2^{emax} "
                  f"(block lsb 2^{base} at −{F}; hatched: truncated)")
    k0b = int(blk.get("k0", 0))
    lost_total = sum(float(t["lost"]) for t in terms)
    head = (f"block {blk.get('block', 0)}: k {k0b}..{k0b + int(blk.get('n_real', n)) - 1}, "
            f"max exponent {emax}, F = {F}; lost to alignment {lost_total:.3g}, "
            f"output rounding {float(blk.get('trunc_err', 0.0)):.3g}")
    if info.get("ptx"):
        head = f"{info.get('arch', '')} {info['ptx']}\n" + head
    if blk.get("special"):
        head += " (NaN/Inf: no alignment)"
    ax.set_title(title or head, fontsize=9)
    ax.legend(loc="lower right", fontsize=7)
    return _save(fig, path)
