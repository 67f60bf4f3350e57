"""A PyTorch (CPU) twin of `bf16emu attention --policy paper:autocast`.

The authors' FlashAttentionFunction.forward (ucker/why-low-precision-training-fails, attention.py;
called from model.py with causal=True and 512 x 512 tiles; train.py runs it under CUDA autocast
with dtype bfloat16), written again here with every dtype of CUDA autocast made explicit. CPU
autocast has other op lists than CUDA autocast, so no autocast is used: every operation is an
FP32 operation on explicitly widened operands followed, where autocast stores BF16, by an
explicit `.to(torch.bfloat16)` (round to nearest even; tests/python/test_paper_autocast_twin.py
checks that torch does exactly that). The site-by-site dtypes are those of docs/pytorch-twin.md.

Two modes for the two non-elementwise kinds of operation:

  "sequential"  matmuls with exact products and FP32 accumulation in increasing index order
                (a Python loop of vectorised FP32 adds), the tile row sum likewise, and exp as
                torch.exp in binary64 rounded once to FP32. This is the order bf16emu models,
                so the result must agree with it bit for bit.
  "native"      torch's own kernels with autocast's dtypes: the matmul in FP32 on the BF16
                operands rounded to BF16, torch.exp on FP32, torch's FP32 sum; compared
                statistically.
  "native-bf16" as "native" but the matmuls are torch's BF16 matmul itself, which on the
                CPU (torch 1.13) does not accumulate in FP32; reported, not asserted.

Inputs and outputs are torch tensors of shape (..., n, d); Q, K, V (and dO) are BF16.
"""

import math

import torch

BF16 = torch.bfloat16
F32 = torch.float32
MAX_NEG = -torch.finfo(BF16).max  # -0x1.fep127, the authors' mask fill (bf16 0xFF7F)
EPSILON = 1e-10                   # their clamp of the tile row sum (an FP32 scalar on the GPU)
TIE_TOL = 1e-3                    # their STABLE tolerance (a Python float, FP32 on the GPU)
TILE = 512                        # model.py: q_bucket_size = k_bucket_size = 512
MODES = ("sequential", "native", "native-bf16")


def _f32_scalar(x):
    """A Python float as CUDA passes it to a kernel: rounded once to FP32."""
    return torch.tensor(x, dtype=torch.float64).to(F32)


def _bf16(x):
    return x.to(BF16)


def matmul_sequential(a, b):
    """a @ b for BF16 a (..., i, t) and b (..., t, j): exact products (a BF16 x BF16 product
    has at most 16 significant bits), accumulated in FP32 in increasing t, then one rounding
    to BF16."""
    a32, b32 = a.to(F32), b.to(F32)
    acc = torch.zeros((*a.shape[:-1], b.shape[-1]), dtype=F32)
    for t in range(a.shape[-1]):
        acc = acc + a32[..., :, t:t + 1] * b32[..., t:t + 1, :]
    return _bf16(acc)


def matmul_native(a, b):
    """autocast's BF16 matmul (BF16 operands, FP32 accumulation, BF16 result) with torch's own
    FP32 kernel and its summation order."""
    return _bf16(torch.matmul(a.to(F32), b.to(F32)))


def matmul_native_bf16(a, b):
    """torch's own BF16 matmul kernel. On torch 1.13's CPU build it does not accumulate in
    FP32 (docs/pytorch-twin.md), so it is not autocast's CUDA arithmetic."""
    return torch.matmul(a, b)


def exp_sequential(x):
    """exp of a BF16 (or FP32) tensor, FP32 result: binary64 exp rounded once to FP32."""
    return torch.exp(x.to(torch.float64)).to(F32)


def exp_native(x):
    return torch.exp(x.to(F32))


def rowsum_sequential(p):
    """Sum over the last axis in FP32, increasing index order."""
    acc = torch.zeros_like(p[..., 0:1])
    for j in range(p.shape[-1]):
        acc = acc + p[..., j:j + 1]
    return acc


def rowsum_native(p):
    return p.sum(dim=-1, keepdim=True)


KERNELS = {
    "sequential": (matmul_sequential, exp_sequential, rowsum_sequential),
    "native": (matmul_native, exp_native, rowsum_native),
    "native-bf16": (matmul_native_bf16, exp_native, rowsum_native),
}


def forward(q, k, v, causal=True, stable=False, beta=2.0, mode="sequential", tile=TILE):
    """The authors' tiled forward under CUDA autocast (bf16). Returns (O, l, m): O BF16, the
    carried row sum l BF16 (all_row_sums has q's dtype) and the running max m BF16."""
    if mode not in KERNELS:
        raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
    mm, exp, rowsum = KERNELS[mode]
    n, d = q.shape[-2], q.shape[-1]
    if k.shape[-2] != n:
        raise ValueError("the twin models self-attention (as many keys as queries)")
    scale = _f32_scalar(d ** -0.5)
    tie_tol = _f32_scalar(TIE_TOL)
    eps = _f32_scalar(EPSILON)
    beta32 = _f32_scalar(beta)
    max_neg = torch.tensor(MAX_NEG, dtype=BF16)

    o_rows, l_rows, m_rows = [], [], []
    for r0 in range(0, n, tile):
        qc = q[..., r0:r0 + tile, :]
        rows = qc.shape[-2]
        o = torch.zeros_like(qc)                                          # BF16
        l = torch.zeros((*qc.shape[:-1], 1), dtype=BF16)                  # BF16
        m = torch.full((*qc.shape[:-1], 1), MAX_NEG, dtype=BF16)          # BF16
        for c0 in range(0, n, tile):                                      # forward key order
            kc, vc = k[..., c0:c0 + tile, :], v[..., c0:c0 + tile, :]
            cols = kc.shape[-2]
            # 1-2. S = einsum(q, k) (BF16) * scale: FP32 product, stored BF16.
            s = _bf16(mm(qc, kc.transpose(-1, -2)).to(F32) * scale)
            # 3. causal fill with -max(bf16) (not -inf); every tile is visited, masked or not.
            if causal and r0 < c0 + tile - 1:  # the authors' test (k_bucket_size, not cols)
                gi = torch.arange(r0, r0 + rows).unsqueeze(-1)
                gj = torch.arange(c0, c0 + cols).unsqueeze(0)
                s = s.masked_fill(gj > gi, max_neg)
            # 4. block max (BF16, exact).
            rm = s.amax(dim=-1, keepdim=True)
            # 5. STABLE: r_m - 1e-3 computed in FP32, stored BF16; ties counted against it.
            if stable:
                close = s >= _bf16(rm.to(F32) - tie_tol)
                many = close.sum(dim=-1, keepdim=True) > 1
                rm = torch.where(many & (rm > 0), _bf16(rm.to(F32) * beta32), rm)
                rm = torch.where(many & (rm < 0), torch.zeros_like(rm), rm)
            # 6. m_new = max(r_m, m_old), BF16.
            m_new = torch.maximum(rm, m)
            # 7. P = exp(S - m_new): BF16 difference, FP32 exp.
            p = exp(_bf16(s.to(F32) - m_new.to(F32)))
            # 8. tile row sum in FP32, clamped at RN_f32(1e-10).
            l_blk = torch.clamp(rowsum(p), min=float(eps))
            # 9. P V: P cast to BF16 by autocast, BF16 matmul.
            pv = mm(_bf16(p), vc)
            # 10. alpha = exp(m_old - m_new): BF16 difference, FP32 exp.
            alpha = exp(_bf16(m.to(F32) - m_new.to(F32)))
            # 11. l_new = alpha * l_old + l_blk in FP32 (two roundings), stored BF16 by copy_.
            l = _bf16(alpha * l.to(F32) + l_blk)
            # 12. O.mul_(alpha).add_(PV): each an FP32 result stored BF16.
            o = _bf16(o.to(F32) * alpha)
            o = _bf16(o.to(F32) + pv.to(F32))
            m = m_new
        # O.div_(l): BF16 / BF16 computed in FP32, stored BF16.
        o_rows.append(_bf16(o.to(F32) / l.to(F32)))
        l_rows.append(l)
        m_rows.append(m)
    return torch.cat(o_rows, dim=-2), torch.cat(l_rows, dim=-2), torch.cat(m_rows, dim=-2)


def lse(l, m):
    """The forward's lse = log(l) + m: log on autocast's FP32 list (binary64 log rounded once
    to FP32), plus the BF16 m in FP32. Shape (..., n)."""
    return (torch.log(l.to(torch.float64)).to(F32) + m.to(F32))[..., 0]


def delta(do, o, mode="sequential"):
    """Backward's D = (dO * O).sum(-1) on BF16 tensors (the authors' backward runs outside
    autocast): the product BF16 (one rounding), the sum accumulated in FP32 (increasing column
    order in "sequential" mode) and stored as BF16. Shape (..., n)."""
    prod = _bf16(do.to(F32) * o.to(F32)).to(F32)
    rowsum = KERNELS[mode][2]
    return _bf16(rowsum(prod)[..., 0])


def reference(q, k, v, causal=True):
    """Exact attention (binary64) on the same BF16 inputs: the O that errors are measured
    against."""
    q64, k64, v64 = q.to(torch.float64), k.to(torch.float64), v.to(torch.float64)
    s = torch.matmul(q64, k64.transpose(-1, -2)) / math.sqrt(q.shape[-1])
    if causal:
        n = q.shape[-2]
        s = s.masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), float("-inf"))
    return torch.matmul(torch.softmax(s, dim=-1), v64)


# ---------------------------------------------------------------------------------------------
# The authors' backward (attention.py, FlashAttentionFunction.backward, lines 120-183)
#
# Under paper:autocast the forward ran under autocast, so its lse is FP32 (log on autocast's
# FP32 list) and P = exp(BF16 S - FP32 lse) is FP32. Eager PyTorch runs the backward outside
# autocast (train.py calls backward() after the autocast block), where einsum(P, dO) mixes FP32
# and BF16 and raises; the code cannot run as written. Two readings (docs/attention.md, "The
# authors' backward"):
#   autocast=True   the backward under autocast(bfloat16), as torch.compile (compile=True in
#                   train.py) traced it in the authors' torch 2.6: every einsum casts its
#                   operands to BF16 and returns BF16; exp and sum return FP32; other ops follow
#                   type promotion.
#   autocast=False  eager semantics, with the mixed einsums promoted: the BF16 operand widened,
#                   an FP32 FMA chain, an FP32 result.


def _rn32_of_exact_sum(acc, prod):
    """RN_f32(acc + prod) for FP32 acc and a product held exactly in binary64: the binary64 sum
    made round-to-odd (its exact error by TwoSum; an even result with a nonzero error moves to
    its odd neighbour on the error's side), then one rounding to FP32, which is then correct
    (53 >= 24 + 2 bits). This is one FP32 fused multiply-add."""
    a = acc.to(torch.float64)
    s = a + prod
    bb = s - a
    err = (a - (s - bb)) + (prod - bb)
    even = (s.view(torch.int64) & 1) == 0
    toward = torch.where(err > 0, torch.full_like(s, math.inf), torch.full_like(s, -math.inf))
    s = torch.where((err != 0) & even, torch.nextafter(s, toward), s)
    return s.to(F32)


def matmul_fma_sequential(a, b):
    """a @ b for FP32 (or BF16) operands as an FP32 FMA chain in increasing t from +0, result
    FP32 (no rounding to BF16). A product of an FP32 and a BF16 number is exact in binary64."""
    a64, b64 = a.to(torch.float64), b.to(torch.float64)
    acc = torch.zeros((*a.shape[:-1], b.shape[-1]), dtype=F32)
    for t in range(a.shape[-1]):
        acc = _rn32_of_exact_sum(acc, a64[..., :, t:t + 1] * b64[..., t:t + 1, :])
    return acc


def backward(q, k, v, o, lse_, do, causal=True, autocast=True, tile=TILE):
    """The authors' tiled backward of paper:autocast, "sequential" mode. q, k, v, o, do BF16 of
    shape (..., n, d); lse_ FP32 of shape (..., n) (lse() above). Returns (dQ, dK, dV, D): the
    gradients in their BF16 buffers, D = rowsum(dO * O) (FP32 under autocast, else BF16)."""
    n, d = q.shape[-2], q.shape[-1]
    scale = _f32_scalar(d ** -0.5)
    lse_c = lse_.to(F32).unsqueeze(-1)
    dq, dk, dv = torch.zeros_like(q), torch.zeros_like(k), torch.zeros_like(v)  # BF16 buffers
    ninf = torch.tensor(float("-inf"), dtype=BF16)
    # the promoted einsum (FP32 result) or autocast's (BF16 operands, BF16 result)
    mixed = (lambda a, b: matmul_sequential(_bf16(a), b)) if autocast else matmul_fma_sequential
    d_rows = None
    for r0 in range(0, n, tile):
        qc, oc, doc, lc = (x[..., r0:r0 + tile, :] for x in (q, o, do, lse_c))
        rows = qc.shape[-2]
        for c0 in range(0, n, tile):  # every key tile, forward order
            kc, vc = k[..., c0:c0 + tile, :], v[..., c0:c0 + tile, :]
            cols = kc.shape[-2]
            # 159: S = einsum(q, k) * scale: a BF16 einsum, then a BF16 * scalar op
            s = _bf16(matmul_sequential(qc, kc.transpose(-1, -2)).to(F32) * scale)
            # 161-163: the causal fill is -inf in the backward (the forward's is -max(bf16))
            if causal and r0 < c0 + tile - 1:
                gi = torch.arange(r0, r0 + rows).unsqueeze(-1)
                gj = torch.arange(c0, c0 + cols).unsqueeze(0)
                s = s.masked_fill(gj > gi, ninf)
            # 165: BF16 S minus FP32 lse promotes to FP32; exp of FP32 is FP32
            p = exp_sequential(s.to(F32) - lc)
            # 170: dV chunk, contracted over the tile's query rows
            dv_chunk = mixed(p.transpose(-1, -2), doc)
            # 171: dP, a BF16 einsum
            dp = matmul_sequential(doc, vc.transpose(-1, -2))
            # 173: D = (dO * O).sum(-1): the product a BF16 op; sum FP32 under autocast, else the
            # sum of a BF16 tensor (FP32 accumulation, stored BF16)
            prod = _bf16(doc.to(F32) * oc.to(F32)).to(F32)
            D = rowsum_sequential(prod) if autocast else _bf16(rowsum_sequential(prod)).to(F32)
            # 174: dS = P * scale * (dP - D): P * scale FP32; dP - D FP32 (FP32 D) or a BF16 op
            diff = dp.to(F32) - D
            if not autocast:
                diff = _bf16(diff).to(F32)
            ds = (p * scale) * diff
            # 176-181: the chunks, added in place into the BF16 buffers (FP32 sum, stored BF16)
            dq_chunk = mixed(ds, kc)
            dk_chunk = mixed(ds.transpose(-1, -2), qc)
            dq[..., r0:r0 + rows, :] = _bf16(dq[..., r0:r0 + rows, :].to(F32) + dq_chunk.to(F32))
            dk[..., c0:c0 + cols, :] = _bf16(dk[..., c0:c0 + cols, :].to(F32) + dk_chunk.to(F32))
            dv[..., c0:c0 + cols, :] = _bf16(dv[..., c0:c0 + cols, :].to(F32) + dv_chunk.to(F32))
        d_rows = D if d_rows is None else torch.cat([d_rows, D], dim=-2)
    d_out = d_rows[..., 0] if autocast else _bf16(d_rows[..., 0])
    return dq, dk, dv, d_out
