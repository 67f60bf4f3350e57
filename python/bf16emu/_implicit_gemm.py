"""Convolutions as implicit GEMMs on a tensor-core preset (issue 43 item 1).

ProductMode (bf16emu/_dispatch.py) sends aten.convolution.default (what F.conv1d/conv2d/conv3d and
nn.Conv*d reach in torch 1.13) and aten.convolution_backward.default here. Each is computed as
GEMMs through the mode's own 2-d product (operands rounded to the dtype, bf16emu.gemm on the
preset, FP32 accumulation and output). The layout, and so the reduction order, is:

- columns: for input x (N, C_in, *S) zero-padded by `padding`, the column matrix of group g has
  one row per K index k = (c, k_1, ..., k_d) with c in the group's C_in/groups channels, in that
  order (channel slowest, the last kernel dimension fastest, as torch's weight layout), and one
  column per (n, o_1, ..., o_d) (batch slowest, the last output dimension fastest);
  element = x_pad[n, c, o_1*stride_1 + k_1*dilation_1, ...].
- forward: for each group g, one GEMM  A = weight_g (C_out/groups x K)  @  B = columns_g
  (K x N*L), L = the number of output positions; the reduction runs over K in the order above,
  in the preset's block order. The bias is added afterwards in FP32 by the host.
- grad_input: for each group, one GEMM  A = weight_g^T (K x C_out/groups)  @  B = grad_out_g
  (C_out/groups x N*L), reduction over the group's output channels; then col2im: the rows of
  that result are scatter-added into a zero FP32 padded input on the host, one kernel offset at a
  time in lexicographic order of (k_1, ..., k_d) (each offset adds one strided slice, so a padded
  position receives its contributions in that order, each a single FP32 add), and the padding is
  cropped.
- grad_weight: for each group, one GEMM  A = grad_out_g (C_out/groups x N*L)  @  B = columns_g^T
  (N*L x K): K of this GEMM is every (batch, output position) in the column order above.
- grad_bias: grad_out summed over batch and spatial dimensions by the host in FP32
  (torch.sum over dims (0, 2, ...)); it is no product.

Transposed convolutions (transposed=True: F.conv_transpose*) are not emulated: the mode raises
NotImplementedError naming them, it never runs them silently in FP32.
"""

from __future__ import annotations

import itertools

import torch

__all__ = ["OPS", "run"]

_aten = torch.ops.aten
OPS = {_aten.convolution.default: "convolution", _aten.convolution_backward.default: "convolution_backward"}


def _refuse_transposed():
    raise NotImplementedError("bf16emu.torch: transposed convolutions (conv_transpose*) are not emulated "
                              "by the tensor-core mode; run them outside the mode")


def _offsets(kernel):
    return list(itertools.product(*[range(k) for k in kernel]))


def _window(o, k, s, d):
    """The strided slice of a padded dimension that kernel offset k reads for o outputs."""
    return slice(k * d, k * d + s * (o - 1) + 1, s)


def _columns(xpad, kernel, out, stride, dilation):
    """(N, C, *Spad) -> (C * prod(kernel), N * prod(out)), K index (c, k_1..k_d)."""
    N, C = xpad.shape[:2]
    parts = []
    for ks in _offsets(kernel):
        idx = (slice(None), slice(None)) + tuple(_window(o, k, s, d) for o, k, s, d in zip(out, ks, stride, dilation))
        parts.append(xpad[idx])  # (N, C, *out)
    cols = torch.stack(parts, dim=2)  # (N, C, KK, *out)
    L = int(torch.tensor(out).prod()) if out else 1
    return cols.reshape(N, C * len(parts), L).permute(1, 0, 2).reshape(C * len(parts), N * L)


def _geometry(x, w, stride, padding, dilation):
    kernel = list(w.shape[2:])
    spatial = list(x.shape[2:])
    out = [(n + 2 * p - d * (k - 1) - 1) // s + 1 for n, k, s, p, d in zip(spatial, kernel, stride, padding, dilation)]
    return kernel, out


def _pad(x, padding):
    xf = x.detach().to(torch.float32)
    if any(padding):
        shape = list(xf.shape[:2]) + [n + 2 * p for n, p in zip(xf.shape[2:], padding)]
        xp = torch.zeros(shape, dtype=torch.float32)
        xp[(slice(None), slice(None)) + tuple(slice(p, p + n) for p, n in zip(padding, xf.shape[2:]))] = xf
        return xp
    return xf


def _expand(v, d):
    v = list(v)
    return v * d if len(v) == 1 else v


def _setup(x, w, stride, padding, dilation, groups):
    """The geometry both directions share: spatial rank, per-dimension stride/padding/dilation,
    kernel and output sizes, batch, channels, and channels per group."""
    d = x.dim() - 2
    stride, padding, dilation = _expand(stride, d), _expand(padding, d), _expand(dilation, d)
    kernel, out = _geometry(x, w, stride, padding, dilation)
    N, Cin = x.shape[:2]
    Cout = w.shape[0]
    return d, stride, padding, dilation, kernel, out, N, Cin, Cout, Cin // groups, Cout // groups


def forward(x, w, bias, stride, padding, dilation, groups, product):
    d, stride, padding, dilation, kernel, out, N, Cin, Cout, cg, og = _setup(x, w, stride, padding, dilation, groups)
    cols = _columns(_pad(x, padding), kernel, out, stride, dilation)  # (Cin*KK, N*L)
    KK = cols.shape[0] // Cin
    wf = w.detach().to(torch.float32).reshape(Cout, cg * KK)
    res = [product(wf[g * og:(g + 1) * og], cols[g * cg * KK:(g + 1) * cg * KK]) for g in range(groups)]
    y = torch.cat(res, 0).reshape(Cout, N, *out).movedim(0, 1)
    if bias is not None:
        y = y + bias.detach().to(torch.float32).reshape([1, Cout] + [1] * d)
    return y.contiguous()


def backward(grad, x, w, stride, padding, dilation, groups, mask, product):
    d, stride, padding, dilation, kernel, out, N, Cin, Cout, cg, og = _setup(x, w, stride, padding, dilation, groups)
    KK = len(_offsets(kernel))
    gf = grad.detach().to(torch.float32).movedim(1, 0).reshape(Cout, grad.numel() // max(Cout, 1))  # (Cout, N*L)
    wf = w.detach().to(torch.float32).reshape(Cout, cg * KK)
    gx = gw = gb = None
    if mask[0]:
        gcols = torch.cat([product(wf[g * og:(g + 1) * og].t(), gf[g * og:(g + 1) * og]) for g in range(groups)], 0)
        gcols = gcols.reshape(Cin, KK, N, *out)
        shape = [N, Cin] + [n + 2 * p for n, p in zip(x.shape[2:], padding)]
        gpad = torch.zeros(shape, dtype=torch.float32)
        for i, ks in enumerate(_offsets(kernel)):
            idx = (slice(None), slice(None)) + tuple(_window(o, k, s, dd) for o, k, s, dd in
                                                     zip(out, ks, stride, dilation))
            gpad[idx] += gcols[:, i].movedim(1, 0)
        gx = gpad[(slice(None), slice(None)) + tuple(slice(p, p + n) for p, n in zip(padding, x.shape[2:]))]
        gx = gx.contiguous().to(x.dtype)
    if mask[1]:
        cols = _columns(_pad(x, padding), kernel, out, stride, dilation)
        gw = torch.cat([product(gf[g * og:(g + 1) * og], cols[g * cg * KK:(g + 1) * cg * KK].t())
                        for g in range(groups)], 0).reshape(w.shape).to(w.dtype)
    if mask[2]:
        gb = grad.to(torch.float32).sum(dim=[0] + list(range(2, grad.dim()))).to(grad.dtype)
    return gx, gw, gb


def run(func, args, kwargs, product):
    """Compute aten.convolution / convolution_backward; returns (result, MACs)."""
    a = list(args)  # torch 1.13 passes every argument positionally (kwargs is empty)
    if OPS[func] == "convolution":
        x, w, bias, stride, padding, dilation, transposed, _op, groups = a[:9]
        if transposed:
            _refuse_transposed()
        y = forward(x, w, bias, stride, padding, dilation, groups, product)
        macs = y.numel() * (w.numel() // w.shape[0])
        return y.to(torch.result_type(x, w)), macs
    grad, x, w, _bs, stride, padding, dilation, transposed, _op, groups, mask = a[:11]
    if transposed:
        _refuse_transposed()
    res = backward(grad, x, w, stride, padding, dilation, groups, mask, product)
    macs = grad.numel() * (w.numel() // w.shape[0]) * (int(bool(mask[0])) + int(bool(mask[1])))
    return res, macs
