"""bf16emu.torch: emulated PyTorch ops with autograd (docs/python.md, "Inside a training step").

    import bf16emu.torch as et
    o = et.attention(q, k, v, policy="paper:autocast", causal=True)        # autograd Function
    y = et.linear(x, weight, bias, arch="sm90", format="bf16")            # tensor-core model
    with et.emulate(model, attention="paper:autocast", linear=None) as m:   # swaps ops in
        loss = m(batch).sum(); loss.backward()
    with et.emulate(model, gpu="sm90", dtype="bf16") as m:   # every mm/bmm/addmm/baddbmm
        loss = m(batch).sum(); loss.backward()                 # on the preset (_dispatch.py)

Every number comes from the compiled core (`bf16emu.attention`, `bf16emu.attention_backward`,
`bf16emu.gemm`, `bf16emu.convert`); this module checks arguments, moves tensors in and out and
reshapes. torch is imported here, not by `import bf16emu`, which needs only NumPy.
"""

from __future__ import annotations

import math
import numbers
import threading

import numpy as np
import torch

import bf16emu as _bf
from bf16emu._args import _format_name, _name
from bf16emu import _core
from bf16emu._attention import request as _request

__all__ = ["attention", "linear", "matmul", "emulate", "Emulated", "scaled_dot_product_attention", "emulate_products"]

_FLOAT_DTYPES = (torch.float32, torch.float64, torch.bfloat16, torch.float16)


def _check_tensor(x, arg: str, ndim=None):
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"argument '{arg}' must be a torch.Tensor, got {type(x).__name__}")
    if x.dtype not in _FLOAT_DTYPES:
        raise TypeError(f"argument '{arg}': dtype {x.dtype} is not supported "
                        f"(torch.float32, torch.float64, torch.bfloat16, torch.float16)")
    if x.device.type != "cpu":
        raise ValueError(f"argument '{arg}' is on device '{x.device}'; the emulation runs on the CPU "
                         f"(move it with .cpu())")
    if ndim is not None and x.dim() not in ((ndim,) if isinstance(ndim, int) else ndim):
        raise ValueError(f"argument '{arg}' must be {ndim}-d, got shape {tuple(x.shape)}")


def _check_name(val, arg: str) -> str:
    """A name as the CLI reads it (bf16emu's one spelling rule: spaces dropped, lower case)."""
    return _name(val, arg)


def _check_count(val, arg: str):
    if isinstance(val, bool) or not isinstance(val, numbers.Integral) or val < 0:
        raise ValueError(f"argument '{arg}' must be an integer >= 0, got {val!r:.80}")


# ---------------------------------------------------------------------------------------------
# attention


class _AttentionFn(torch.autograd.Function):
    """q (B, H, n, d); k, v (B, Hkv, n, d) with Hkv dividing H (grouped-query: each K/V head
    serves H/Hkv consecutive query heads, as torch's repeat_interleave). `opts` are the keyword
    arguments of bf16emu.attention; `led` a dict that receives the ledgers (or None)."""

    @staticmethod
    def forward(ctx, q, k, v, opts, backward, led, led_backward):
        group = q.shape[1] // k.shape[1]
        kx, vx = (t.repeat_interleave(group, dim=1) if group > 1 else t for t in (k, v))
        forward_opts = {key: val for key, val in opts.items() if not key.startswith("bwd_")}
        r = _bf.attention(q.detach(), kx.detach(), vx.detach(), ledger=led is not None, reference=False,
                          **forward_opts)
        if led is not None:
            led.update(r["ledger"])
        ctx.save_for_backward(q, k, v)
        ctx.opts, ctx.backward, ctx.group = opts, backward, group
        ctx.led = led if led_backward else None
        return torch.from_numpy(r["o"]).to(q.dtype)

    @staticmethod
    def backward(ctx, do):
        q, k, v = ctx.saved_tensors
        group = ctx.group
        kx, vx = (t.repeat_interleave(group, dim=1) if group > 1 else t for t in (k, v))
        r = _bf.attention_backward(q.detach(), kx.detach(), vx.detach(), do.detach().to(q.dtype).contiguous(),
                                   backward=ctx.backward, ledger=ctx.led is not None, reference=False, **ctx.opts)
        if ctx.led is not None:
            ctx.led["backward"] = r["ledger"]
        dq = torch.from_numpy(r["dq"])
        dk, dv = (torch.from_numpy(r[key]) for key in ("dk", "dv"))
        if group > 1:  # the K/V head's gradient: the sum over the query heads it served (binary64)
            b, h, n, d = dk.shape
            dk, dv = (t.view(b, h // group, group, n, d).sum(dim=2) for t in (dk, dv))
        return dq.to(q.dtype), dk.to(k.dtype), dv.to(v.dtype), None, None, None, None


def attention(q, k, v, *, policy: str, variant: str = "fa2", beta: float = 2.0, causal: bool = False, scale=None,
              sites=None, backward=None, ledger: bool = False, block_m: int = 0, block_n: int = 0,
              threads: int = 0, tie_tol: float = 1e-3, bwd_block_m=None, bwd_block_n=None):
    """softmax(q kᵀ · scale) v under a bf16emu rounding policy, as an autograd Function.

    q (batch, heads, seq, dim); k, v (batch, kv_heads, seq, dim) with kv_heads dividing heads
    (grouped-query attention). Tensors: float32, float64, bfloat16 or float16 on the CPU; their
    values are taken exactly. The forward is bf16emu.attention (the output holds the policy's
    values, returned in q's dtype); the backward is bf16emu.attention_backward with
    backward='tiled' (FlashAttention-2's Algorithm 2, the CLI's --bwd tiled) or 'reference'.
    The tiled backward does not model paper:autocast or site overrides: they need 'reference'
    (ValueError for 'tiled'); None (the default) takes 'tiled' where it is modelled, else
    'reference'. Under the paper policies, 'authors' is the paper authors' own attention.py
    backward (under paper:autocast run under autocast, as torch.compile traced it: an inference,
    docs/attention.md) and 'authors:promote' its eager reading (the mixed einsums in FP32).
    sites: the CLI's --site-precision overrides, e.g. {"row_sum": "fp32"}; tie_tol the
    stabilized variant's tie tolerance; bwd_block_m, bwd_block_n the tiled backward's blocks.
    Every rule between arguments is the CLI's (one request, src/io), checked at this call.
    ledger=True returns (o, ledger): the forward's ledger dict, which gets a 'backward' entry (the
    backward call's ledger) once the gradient has been computed; ledger='forward' returns the
    forward's only (the backward then runs without one, about twice as fast).

    >>> q = torch.randn(1, 2, 8, 4, requires_grad=True)
    >>> o = et.attention(q, q, q, policy="paper:autocast")
    >>> o.sum().backward(); o.shape, q.grad.shape
    (torch.Size([1, 2, 8, 4]), torch.Size([1, 2, 8, 4]))
    """
    for name, val in (("q", q), ("k", k), ("v", v)):
        _check_tensor(val, name, 4)
    if k.shape != v.shape:
        raise ValueError(f"argument 'v': shape {tuple(v.shape)} does not match argument 'k' {tuple(k.shape)}")
    b, h, n, d = q.shape
    if k.shape[0] != b or k.shape[2] != n or k.shape[3] != d:
        raise ValueError(f"argument 'k': shape {tuple(k.shape)} does not fit argument 'q' {tuple(q.shape)} "
                         f"(batch, seq and dim must agree)")
    if k.shape[1] < 1 or h % k.shape[1]:
        raise ValueError(f"argument 'k': {k.shape[1]} heads do not divide the {h} heads of argument 'q'")
    if not isinstance(ledger, bool) and ledger != "forward":
        raise TypeError(f"argument 'ledger' must be a bool or 'forward', got {ledger!r:.80}")
    opts = _request(policy=policy, variant=variant, beta=beta, causal=causal, scale=scale, sites=sites,
                    block_m=block_m, block_n=block_n, threads=threads, tie_tol=tie_tol, bwd_block_m=bwd_block_m,
                    bwd_block_n=bwd_block_n)
    # Every rule of bf16emu.attention (the CLI's, src/io) before any work, so that a bad argument
    # fails here and not inside loss.backward(); None takes 'tiled' where it is modelled.
    backward = _core.attention_check({**opts, **_request(backward=backward)})
    led = {} if ledger else None
    o = _AttentionFn.apply(q, k, v, opts, backward, led, ledger is True)
    return (o, led) if ledger else o


# ---------------------------------------------------------------------------------------------
# linear and matmul: every product through bf16emu.gemm


class _Preset:
    """The tensor-core preset and the input rounding of linear/matmul."""

    def __init__(self, arch, kind, format, rounding, seed, threads, output=None, streams=6):
        arch, rounding = _check_name(arch, "arch"), _check_name(rounding, "rounding")
        if kind is not None:
            kind = _check_name(kind, "kind")
        _check_count(threads, "threads")
        user_format, format = format, _format_name(format, "format")
        if format not in ("bf16", "fp16", "e4m3", "e5m2"):
            raise ValueError(f"argument 'format': '{user_format[:80]}' is not a tensor-core input format here "
                             f"(bf16, fp16, e4m3, e5m2)")
        if output is not None:
            user_output = output
            output = _format_name(output, "output") if isinstance(output, str) else output
            if output not in ("bf16", "fp16"):
                raise ValueError(f"argument 'output' must be None, 'bf16' or 'fp16', got {user_output!r:.80}")
        if rounding in ("stochastic", "sr") and seed is None:
            raise ValueError("argument 'seed' is needed with rounding='stochastic'")
        if isinstance(seed, (bool, np.bool_)):
            raise TypeError(f"argument 'seed' must be an integer, got {type(seed).__name__}")
        if seed is not None and (not isinstance(seed, numbers.Integral) or seed < 0):
            raise ValueError(f"argument 'seed' must be an integer >= 0, got {seed!r:.80}")
        # Every random stream the call can draw (seed + 0 .. seed + streams: inputs, dD and the
        # outputs of the forward and the backward) is a seed in [0, 2^64): checked now, before the
        # forward, not in the middle of loss.backward().
        if seed is not None and int(seed) + streams >= 1 << 64:
            raise ValueError(f"argument 'seed' = {int(seed)}: this call draws streams seed .. seed + {streams}, "
                             f"which must be below 2^64 (seed <= {(1 << 64) - 1 - streams})")
        self.arch, self.kind, self.format, self.rounding = arch, kind, format, rounding
        self.seed, self.threads, self.output = seed, threads, output
        self.round(np.zeros((1, 1), np.float32), 0)  # checks rounding and format names now
        self.gemm(self.round(np.zeros((1, 1), np.float32), 0), self.round(np.zeros((1, 1), np.float32), 0))

    def round(self, x, stream: int):
        """x (NumPy fp32/fp64/fp16 or bf16 bits) rounded to the input format: bit patterns.
        Stochastic rounding: element i draws its bits from (seed + stream, i)."""
        fmt = "bf16" if x.dtype == np.uint16 else None
        seed = None if self.seed is None else self.seed + stream
        bits = _bf.convert(x, to=self.format, format=fmt, rounding=self.rounding, seed=seed,
                           threads=self.threads)
        return bits

    def gemm(self, a, b, c=None, stream=None):
        """D = A B + C in FP32 (C: FP32, None = 0) on the preset; a (M x K), b (K x N) in the
        input format. With an output format, D is rounded to it (stream: as round()) and
        handed back as FP32 values. An empty product (M, N or K = 0) is C (or zeros), as torch's."""
        fmt = self.format if a.dtype != np.float16 else None
        if 0 in (a.shape[0], a.shape[1], b.shape[1]):
            d = np.zeros((a.shape[0], b.shape[1]), np.float32) if c is None else np.array(c, np.float32)
        else:
            d = _bf.gemm(a, b, c, arch=self.arch, kind=self.kind, a_format=fmt, threads=self.threads)
        if self.output is None or stream is None:
            return d
        seed = None if self.seed is None else self.seed + stream
        bits = _bf.convert(d, to=self.output, rounding=self.rounding, seed=seed, threads=self.threads)
        wide = _bf.convert(bits, to="fp32", format=self.output if bits.dtype == np.uint16 else None)
        return wide


def _numpy(t):
    """A detached CPU tensor's values as a NumPy array bf16emu reads (bf16 as uint16 bits)."""
    t = t.detach().contiguous()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(np.uint16)
    return t.numpy()


def _tensor(d, like):
    return torch.from_numpy(np.ascontiguousarray(d)).to(like.dtype)


class _ProductFn(torch.autograd.Function):
    """D = A B + bias for a (M, K), b (K, N), bias (N,) or None, every product on the preset:
    D = A·B accumulated onto C = bias (FP32, broadcast over the rows), dA = dD·Bᵀ,
    dB = Aᵀ·dD, dbias = 1ᵀ·dD; each operand rounded to the input format first (a, b, dD with
    streams 0, 1, 2)."""

    @staticmethod
    def forward(ctx, a, b, bias, preset):
        aq, bq = preset.round(_numpy(a), 0), preset.round(_numpy(b), 1)
        c = None
        if bias is not None:
            c = np.broadcast_to(_numpy(bias.to(torch.float32)), (aq.shape[0], bq.shape[1])).copy()
        ctx.save_for_backward(a, b)
        ctx.preset, ctx.q, ctx.has_bias = preset, (aq, bq), bias is not None
        return _tensor(preset.gemm(aq, bq, c, 3), a)

    @staticmethod
    def backward(ctx, dd):
        a, b = ctx.saved_tensors
        aq, bq = ctx.q
        p = ctx.preset
        dq = p.round(_numpy(dd), 2)
        da = _tensor(p.gemm(dq, bq.T, None, 4), a) if ctx.needs_input_grad[0] else None
        db = _tensor(p.gemm(aq.T, dq, None, 5), b) if ctx.needs_input_grad[1] else None
        dbias = None
        if ctx.has_bias and ctx.needs_input_grad[2]:
            ones = p.round(np.ones((1, dq.shape[0]), np.float32), 0)  # 1 is exact in every format
            dbias = _tensor(p.gemm(ones, dq, None, 6).reshape(-1), b)
        return da, db, dbias, None


def matmul(a, b, *, arch: str = "sm90", kind=None, format: str = "bf16", rounding: str = "nearest_even",
           seed=None, output=None, threads: int = 0):
    """a @ b with every product (forward, dA = dD·Bᵀ, dB = Aᵀ·dD) on the tensor-core model of
    `arch`/`kind` (bf16emu.gemm). a (..., M, K), b (K, N) or (..., K, N) with a's leading
    shape. Operands are rounded to `format` (bf16, fp16, e4m3, e5m2) with `rounding` first
    (stochastic: element i of a, b, dD draws its bits from (seed, i), (seed + 1, i),
    (seed + 2, i)); the gradient passes the rounding straight through. The products accumulate
    in FP32 (the preset's C/D format) from C = 0; k runs in increasing order, cut into the
    instruction's k chunks, each a chain of the preset's hardware blocks (docs/tensor-cores.md);
    for dB, k is a's rows (the batch and sequence positions, flattened in C order).
    output='bf16' or 'fp16' rounds each product's FP32 result (D, dA, dB) to that format with
    `rounding` (stochastic: streams seed + 3, + 4, + 5). The result has a's dtype.

    >>> et.matmul(torch.ones(4, 32), torch.ones(32, 8), arch="sm90", format="bf16")[0, 0].item()
    32.0
    """
    _check_tensor(a, "a")
    _check_tensor(b, "b")
    if a.dim() < 2 or b.dim() < 2:
        raise ValueError(f"arguments 'a' and 'b' must be at least 2-d, got {tuple(a.shape)} and {tuple(b.shape)}")
    if a.shape[-1] != b.shape[-2]:
        raise ValueError(f"argument 'b': shape {tuple(b.shape)} does not fit argument 'a' {tuple(a.shape)}")
    if b.dim() > 2 and b.shape[:-2] != a.shape[:-2]:
        raise ValueError(f"argument 'b': leading shape {tuple(b.shape[:-2])} is not a's {tuple(a.shape[:-2])}")
    preset = _Preset(arch, kind, format, rounding, seed, threads, output, streams=5)
    if b.dim() == 2:  # explicit sizes: reshape(-1, 0) is ambiguous for K = 0
        out = _ProductFn.apply(a.reshape(math.prod(a.shape[:-1]), a.shape[-1]), b, None, preset)
        return out.reshape(*a.shape[:-1], b.shape[-1])
    lead = a.shape[:-2]
    if math.prod(lead) == 0:  # a batch of 0: torch's empty result (no product is computed)
        return torch.matmul(a, b)
    a3, b3 = a.reshape(math.prod(lead), *a.shape[-2:]), b.reshape(math.prod(lead), *b.shape[-2:])
    out = torch.stack([_ProductFn.apply(a3[i], b3[i], None, preset) for i in range(a3.shape[0])])
    return out.reshape(*lead, a.shape[-2], b.shape[-1])


def linear(x, weight, bias=None, *, arch: str = "sm90", kind=None, format: str = "bf16",
           rounding: str = "nearest_even", seed=None, output=None, threads: int = 0):
    """torch.nn.functional.linear (y = x Wᵀ + bias) with the three products on the tensor-core
    model: Y = X·Wᵀ accumulated onto C = bias (FP32), dX = dY·W, dWᵀ = Xᵀ·dY (k = the rows of
    x, leading dims flattened in C order) and dbias = 1ᵀ·dY. Rounding, k order and seeds as
    matmul() with a = x and b = Wᵀ (output rounding: dbias with stream seed + 6); the result
    has x's dtype.

    >>> et.linear(torch.ones(2, 16), torch.ones(3, 16), torch.zeros(3)).tolist()
    [[16.0, 16.0, 16.0], [16.0, 16.0, 16.0]]
    """
    _check_tensor(x, "x")
    _check_tensor(weight, "weight", 2)
    if bias is not None:
        _check_tensor(bias, "bias", 1)
        if bias.shape[0] != weight.shape[0]:
            raise ValueError(f"argument 'bias': {bias.shape[0]} elements for {weight.shape[0]} outputs")
    if x.dim() < 1 or x.shape[-1] != weight.shape[1]:
        raise ValueError(f"argument 'x': shape {tuple(x.shape)} does not fit argument 'weight' "
                         f"{tuple(weight.shape)}")
    preset = _Preset(arch, kind, format, rounding, seed, threads, output, streams=6)
    y = _ProductFn.apply(x.reshape(math.prod(x.shape[:-1]), x.shape[-1]), weight.t(), bias, preset)
    return y.reshape(*x.shape[:-1], weight.shape[0])


# ---------------------------------------------------------------------------------------------
# emulate: serve a model's nn.Linear layers and scaled_dot_product_attention calls

_ACTIVE = []  # the emulations in force, innermost last
_TORCH_SDPA = getattr(torch.nn.functional, "scaled_dot_product_attention", None)
# The emulated models whose forward is running in this thread, innermost last: attention is
# emulated only inside the forward of a model handed to emulate(), never in another model's.
_RUNNING = threading.local()


def _running() -> list:
    if not hasattr(_RUNNING, "stack"):
        _RUNNING.stack = []
    return _RUNNING.stack


def _check_sdpa_shapes(query, key, value):
    """torch's rules for scaled_dot_product_attention's shapes, naming the argument."""
    for name, t in (("query", query), ("key", key), ("value", value)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"argument '{name}' must be a torch.Tensor, got {type(t).__name__}")
        if t.dim() < 2:
            raise ValueError(f"argument '{name}' must be at least 2-d (..., seq, dim), got shape {tuple(t.shape)}")
    if key.dim() != query.dim() or value.dim() != query.dim():
        raise ValueError(f"arguments 'query', 'key', 'value' must have the same number of dimensions, got "
                         f"{tuple(query.shape)}, {tuple(key.shape)}, {tuple(value.shape)}")
    if key.shape[-1] != query.shape[-1]:
        raise ValueError(f"argument 'key': dim {key.shape[-1]} is not the dim {query.shape[-1]} of argument 'query'")
    if value.shape[:-1] != key.shape[:-1]:
        raise ValueError(f"argument 'value': shape {tuple(value.shape)} does not fit argument 'key' {tuple(key.shape)}")
    if query.dim() >= 3:
        if key.shape[:-3] != query.shape[:-3]:
            raise ValueError(f"argument 'key': batch shape {tuple(key.shape[:-3])} is not the "
                             f"{tuple(query.shape[:-3])} of argument 'query'")
        if key.shape[-3] < 1 or query.shape[-3] % key.shape[-3]:
            raise ValueError(f"argument 'key': {key.shape[-3]} heads do not divide the {query.shape[-3]} heads "
                             f"of argument 'query'")


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None):
    """torch.nn.functional.scaled_dot_product_attention, or bf16emu.torch.attention inside the
    forward of a model under emulate(..., attention=...) (that model's calls only: another
    model's, or a call outside the model's forward, are torch's). torch 1.13 has no F.scaled_dot_product_attention:
    a model written for 1.13 calls this function (outside an emulation it computes
    softmax(q kᵀ · scale + mask) v with torch's own ops); on torch >= 2.0 emulate() also
    routes F.scaled_dot_product_attention here.

    >>> q = torch.randn(1, 2, 8, 4)
    >>> et.scaled_dot_product_attention(q, q, q, is_causal=True).shape
    torch.Size([1, 2, 8, 4])
    """
    _check_sdpa_shapes(query, key, value)
    em = next((e for e in reversed(_running()) if e.attention is not None), None)
    cfg = None if em is None else em.attention
    if cfg is not None:
        if attn_mask is not None:
            raise ValueError("argument 'attn_mask': the emulated attention takes is_causal only")
        if dropout_p:
            raise ValueError("argument 'dropout_p' must be 0 under the emulated attention")
        if query.dim() != 4:
            raise ValueError(f"argument 'query' must be 4-d (batch, heads, seq, dim) under the emulated attention, "
                             f"got shape {tuple(query.shape)}")
        if em.collect_ledgers:
            o, led = attention(query, key, value, causal=bool(is_causal), scale=scale, ledger=em.collect_ledgers,
                               **cfg)
            em.ledgers.append(led)
            return o
        return attention(query, key, value, causal=bool(is_causal), scale=scale, **cfg)
    if _TORCH_SDPA is not None:
        kwargs = {} if scale is None else {"scale": scale}
        return _TORCH_SDPA(query, key, value, attn_mask=attn_mask, dropout_p=dropout_p, is_causal=is_causal,
                           **kwargs)
    n, s = query.shape[-2], key.shape[-2]
    sc = scale if scale is not None else query.shape[-1] ** -0.5
    if query.dim() >= 3 and key.shape[-3] != query.shape[-3]:
        group = query.shape[-3] // key.shape[-3]
        key, value = key.repeat_interleave(group, dim=-3), value.repeat_interleave(group, dim=-3)
    scores = torch.matmul(query, key.transpose(-2, -1)) * sc
    if is_causal:
        scores = scores.masked_fill(torch.ones(n, s, dtype=torch.bool).triu(1), float("-inf"))
    if attn_mask is not None:
        scores = scores.masked_fill(~attn_mask, float("-inf")) if attn_mask.dtype == torch.bool else scores + attn_mask
    p = torch.softmax(scores, dim=-1)
    if dropout_p:
        p = torch.nn.functional.dropout(p, dropout_p)
    return torch.matmul(p, value)


_attention, _linear = attention, linear
from bf16emu._emulate import Emulated, emulate  # noqa: E402  (moved out, issue 43)
from bf16emu._dispatch import ProductMode, emulate_products  # noqa: E402,F401  (issue 43)
