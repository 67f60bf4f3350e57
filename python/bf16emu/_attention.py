"""Attention forward and backward under a kernel's or the paper's arithmetic, with the ledger."""

from __future__ import annotations

import numbers

import numpy as np

from . import _core
from ._args import _bool, _name, _threads
from ._bits import to_bits


def _as_float64(x, arg: str, fmt):
    bits, name, _ = to_bits(x, fmt, arg)
    if name == "fp64":
        return bits.view(np.float64)
    out, _ = _core.convert(bits, name, "fp64", {})  # exact widening
    return out.view(np.float64)


def attention(q, k, v, *, policy: str = "fa2:sm80", variant: str = "fa2", beta: float = 2.0, causal: bool = False,
              ledger: bool = True, reference: bool = True, block_m: int = 0, block_n: int = 0,
              format: str | None = None, threads: int = 0, sites=None, scale=None, tie_tol: float = 1e-3,
              bwd_block_m: int | None = None, bwd_block_n: int | None = None, _do=None, _backward: str = ""):
    """Attention forward under a rounding policy (exact, fp32, paper, paper:autocast,
    fa2:sm80/sm89/sm90/sm100, fa2_twin) and variant (standard, fa2, stabilized with beta > 1 and
    tie_tol). q, k, v: (batch, heads, seq, dim), PyTorch's layout, any float dtype (values are
    taken exactly). sites: the CLI's --site-precision overrides, as {"row_sum": "fp32"} or
    "row_sum=fp32,pv=exact"; scale: the softmax scale (None: 1/sqrt(dim) rounded to FP32);
    block_m, block_n: the forward's Br, Bc (0: the policy's); bwd_block_m, bwd_block_n: the tiled
    backward's (attention_backward). Every rule between arguments is the CLI's (src/io's one
    request), in the same words. Returns a dict: 'o' (batch, heads, seq, dim) and 'lse' (batch,
    heads, seq) as float64 arrays holding the policy's output values, 'o_exact' and
    'output_error' (with reference=True), 'ledger' (sites -> error counts and sums; with
    ledger=True), and the policy settings.

    >>> q = np.random.default_rng(0).standard_normal((1, 2, 16, 8))   # (batch, heads, seq, dim)
    >>> r = bf16emu.attention(q, q, q, policy="paper:autocast", causal=True)
    >>> r["o"].shape, r["lse"].shape, "ledger" in r
    ((1, 2, 16, 8), (1, 2, 16), True)
    """
    kw = request(policy=policy, variant=variant, beta=beta, causal=causal, ledger=ledger, reference=reference,
                 block_m=block_m, block_n=block_n, threads=threads, sites=sites, scale=scale, tie_tol=tie_tol,
                 bwd_block_m=bwd_block_m, bwd_block_n=bwd_block_n, backward=_backward)
    arrays = [_as_float64(x, n, format) for x, n in ((q, "q"), (k, "k"), (v, "v"))]
    for x, n in zip(arrays, "qkv"):
        if x.ndim != 4:
            raise ValueError(f"argument '{n}' must be 4-d (batch, heads, seq, dim), got shape {tuple(x.shape)}")
    dout = _as_float64(_do, "do", format) if _backward else None
    return _core.attention(arrays[0], arrays[1], arrays[2], dout, kw)


def request(**kwargs) -> dict:
    """The keyword arguments of attention() as the core's one request takes them: Python types
    checked here (TypeError), names and every rule between arguments in the core (src/io's
    make_attention_options, the CLI's), so no front end is laxer than another. None leaves an
    argument out (the core's default)."""
    kw = {}
    for name, val in kwargs.items():
        if val is None:
            continue
        if name in ("policy", "variant"):
            val = _name(val, name)  # the one spelling rule
        elif name == "backward":
            if not isinstance(val, str):
                raise TypeError(f"argument 'backward' must be a name (str), got {type(val).__name__}")
        elif name in ("causal", "ledger", "reference"):
            val = _bool(val, name)
        elif name in ("beta", "tie_tol"):
            if not isinstance(val, numbers.Real) or isinstance(val, (bool, np.bool_)):
                raise TypeError(f"argument '{name}' must be a number, got {type(val).__name__}")
            val = float(val)
        elif name in ("block_m", "block_n", "bwd_block_m", "bwd_block_n"):
            if isinstance(val, (bool, np.bool_)) or not isinstance(val, numbers.Integral):
                raise TypeError(f"argument '{name}' must be an integer, got {type(val).__name__}")
            val = max(min(int(val), 1 << 62), -(1 << 62))  # the core's range error names it
        elif name == "threads":
            val = _threads(val)
        elif name == "sites":
            val = _site_spec(val)
        elif name == "scale":
            val = _softmax_scale(val)
        kw[name] = val
    return kw


def _site_spec(sites) -> str:
    """The --site-precision text of `sites`: None, a "SITE=PREC,..." string or a {site: prec} dict."""
    if sites is None:
        return ""
    if isinstance(sites, str):
        return sites
    if not isinstance(sites, dict):
        raise TypeError(f"argument 'sites' must be a dict {{site: precision}} or a str, got {type(sites).__name__}")
    for key, val in sites.items():
        if not isinstance(key, str) or not isinstance(val, str):
            raise TypeError(f"argument 'sites': keys and values must be names (str), got {key!r:.40}: {val!r:.40}")
        for what, text in (("key", key), ("value", val)):
            if "," in text or "=" in text or not text.strip():
                raise ValueError(f"argument 'sites': {what} {text[:80]!r} is not one name (a site name: precision "
                                 f"fp32, exact or policy; one entry per site)")
    return ",".join(f"{key.strip()}={val.strip()}" for key, val in sites.items())


def _softmax_scale(scale) -> float:
    if isinstance(scale, bool) or not isinstance(scale, numbers.Real):
        raise TypeError(f"argument 'scale' must be a number or None, got {type(scale).__name__}")
    if float(scale) == 0:  # 0 is the core's "1/sqrt(dim)": refused as the value it is
        raise ValueError("argument 'scale' must be a positive finite number (0 or none: 1/sqrt(dim))")
    return float(scale)


def attention_backward(q, k, v, do, *, backward: str = "reference", **kwargs):
    """Forward and backward (dq, dk, dv, delta, and their errors against the exact policy's
    reference backward) under the policy; backward='reference', 'tiled' (the FlashAttention-2
    tiled backward), or under the paper policies 'authors' (the paper authors' attention.py
    backward; under paper:autocast run under autocast, an inference: docs/attention.md) or
    'authors:promote' (its eager reading, the mixed FP32 x BF16 einsums in FP32). Same arguments
    and dict as attention(), plus these keys.

    >>> q = np.random.default_rng(0).standard_normal((1, 1, 8, 4))
    >>> r = bf16emu.attention_backward(q, q, q, np.ones_like(q), policy="fa2:sm90", backward="tiled")
    >>> r["dq"].shape, r["dk"].shape, r["dv"].shape
    ((1, 1, 8, 4), (1, 1, 8, 4), (1, 1, 8, 4))
    """
    if not isinstance(backward, str) or not backward.strip():
        raise ValueError(f"argument 'backward' must name a backward kind (the core's: reference, tiled, ...), "
                         f"got {str(backward)[:80]!r}")
    return attention(q, k, v, _do=do, _backward=backward, **kwargs)


# ---------------------------------------------------------------------------
# OCP MX block scaling (docs/formats.md): quantize_mx and its exact inverse.
