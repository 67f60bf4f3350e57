"""Convolutions as implicit GEMMs on a tensor-core preset (issue 43 item 1, docs/torch-convolution.md).

ProductMode sends aten.convolution (forward of F.conv1d/conv2d/conv3d, nn.ConvNd) and
aten.convolution_backward here. Everything is a plain bf16emu.gemm on the preset, the data
movement around it exact (NumPy copies), and every addition outside the GEMM done in FP32 on the
host in the order stated below. With fp8 operands (dtype e4m3/e5m2) each tensor (w, x, grad_output) has one scale (_fp8), the
same for every group. Notation: x (N, C_in, *S), weight w (C_out, C_in/G, *R), G
groups, output (N, C_out, *P); Cg = C_in/G, Og = C_out/G; L = prod(P) output positions,
numbered row-major (last spatial dim fastest); kernel offsets r numbered row-major likewise.

Forward, one GEMM per group g:
    A = w[g*Og:(g+1)*Og] reshaped (Og x K),  K = Cg * prod(R), K index = (c, r) with c slowest
        (c_in within the group, then the kernel offsets row-major) -- w's own memory order;
    B = cols (K x N*L): cols[(c, r), (n, l)] = x_padded[n, g*Cg + c, l*stride + r*dilation]
        (zero where the window reads padding), column index n slowest, then l;
    D = A @ B on the preset (operands rounded to `dtype`, FP32 accumulation and output), so each
    output element is one dot product over K in the order above; then the bias, if any, is added
    to D in FP32 by the host (out = D + bias[o]), as for addmm.
Backward (aten.convolution_backward, output_mask picks which of the three are made):
    grad_input:  dcols = A^T (K x Og) @ gO_g (Og x N*L) on the preset, reduction over the Og
        output channels of the group in order; then col2im in FP32 on the host: grad_x_padded
        starts at +0.0 and for each kernel offset r in row-major order, dcols[(c, r), (n, l)] is
        added to grad_x_padded[n, g*Cg + c, l*stride + r*dilation] (for one r no two l hit the
        same element); so each input element's contributions are summed in kernel-offset order.
        The padding border is then cut off.
    grad_weight: dW_g (Og x K) = gO_g (Og x N*L) @ cols^T (N*L x K) on the preset, reduction
        over the N*L (batch element, output position) pairs, n slowest.
    grad_bias:   grad_output summed over the batch and spatial dims by the host in FP32
        (torch.sum over dims [0, 2, ...]), as PyTorch does for addmm's bias.
Transposed convolutions (transposed=True; w (C_in, Og, *R), output (N, C_out, *P')):
    output: dcols = W_g^T (Og*prod(R) x Cg_in) @ x_g (Cg_in x N*L_in) on the preset, reduction
        over the group's input channels in order; then the same FP32 col2im as grad_input above
        (kernel offsets in row-major order) into the padded output, cut to P'; bias in FP32 after.
    grad_input: the plain convolution of grad_output with w (the forward above, no bias).
    grad_weight: dW_g (Cg_in x Og*prod(R)) = x_g (Cg_in x N*L_in) @ cols(grad_output)^T on the
        preset, reduction over the (n, input position) pairs, n slowest.
    grad_bias: as above.
"""

from __future__ import annotations

import itertools
import time

import numpy as np
import torch

from . import _autocast as _ac, _fp8
from ._report import difference

__all__ = ["OPS", "conv_forward", "conv_backward", "macs", "dispatch"]

_aten = torch.ops.aten
OPS = {_aten.convolution.default: "convolution", _aten.convolution_backward.default: "convolution_backward"}


def _f32(t):
    return np.ascontiguousarray(t.detach().to(torch.float32).numpy())


def _geometry(x_shape, w_shape, stride, padding, dilation):
    spatial = len(x_shape) - 2
    stride, padding, dilation = (list(v) * spatial if len(v) == 1 else list(v) for v in (stride, padding, dilation))
    R = list(w_shape[2:])
    P = [(x_shape[2 + i] + 2 * padding[i] - dilation[i] * (R[i] - 1) - 1) // stride[i] + 1 for i in range(spatial)]
    return stride, padding, dilation, R, P


def _cols(xp, g, Cg, R, P, stride, dilation):
    """cols (K x N*L) of group g from the padded input xp (N, C_in, *S_padded), FP32."""
    N = xp.shape[0]
    K = Cg * int(np.prod(R))
    L = int(np.prod(P))
    out = np.empty((Cg, *R, N, *P), np.float32)
    xg = xp[:, g * Cg:(g + 1) * Cg]
    for r in itertools.product(*(range(k) for k in R)):
        sl = tuple(slice(r[i] * dilation[i], r[i] * dilation[i] + (P[i] - 1) * stride[i] + 1, stride[i])
                   for i in range(len(R)))
        # xg[:, :, window] is (N, Cg, *P); cols wants (Cg, N, *P) at kernel offset r.
        out[(slice(None), *r)] = np.moveaxis(xg[(slice(None), slice(None), *sl)], 0, 1)
    return out.reshape(K, N * L)


def _pad(x, padding):
    return np.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in padding])


def macs(func, args):
    """Multiply-adds of the preset GEMMs of this call (for the report)."""
    fwd = func is _aten.convolution.default
    x, w = (args[0], args[1]) if fwd else (args[1], args[2])
    if (args[6] if fwd else args[7]):  # transposed: one MAC per (input position, weight element)
        per = int(x.shape[0]) * int(np.prod(x.shape[2:])) * int(w.numel())
    elif fwd:
        _, _, _, R, P = _geometry(x.shape, w.shape, args[3], args[4], args[5])
        per = int(x.shape[0]) * int(np.prod(P)) * int(w.numel())
    else:
        per = int(args[0].shape[0]) * int(np.prod(args[0].shape[2:])) * int(w.numel())
    return per if fwd else per * (int(bool(args[10][0])) + int(bool(args[10][1])))


def conv_forward(args, gpu, dtype):
    x, w, bias, stride, padding, dilation, transposed, output_padding, groups = args
    if transposed:
        return _transposed_forward(x, w, bias, stride, padding, dilation, output_padding, groups, gpu, dtype)
    stride, padding, dilation, R, P = _geometry(x.shape, w.shape, stride, padding, dilation)
    N, C_out, G = int(x.shape[0]), int(w.shape[0]), int(groups)
    Cg, Og, L = int(w.shape[1]), C_out // G, int(np.prod(P))
    out = np.empty((C_out, N * L), np.float32)
    if N * L and C_out:
        xp, wn = _pad(_f32(x), padding), _f32(w).reshape(C_out, -1)
        sc = _fp8.exponents(dtype, w, x)  # fp8: one scale per tensor (_fp8), else (None, None)
        for g in range(G):
            out[g * Og:(g + 1) * Og] = _fp8.product(wn[g * Og:(g + 1) * Og], _cols(xp, g, Cg, R, P, stride, dilation),
                                                    gpu, dtype, *sc)
    res = torch.from_numpy(np.ascontiguousarray(np.moveaxis(out.reshape(C_out, N, *P), 0, 1)))
    if bias is not None:
        res = res + bias.detach().to(torch.float32).reshape(1, C_out, *([1] * len(P)))
    return res.to(torch.result_type(x, w))


def _col2im(dcols, N, Cg, R, P, S_padded, stride, dilation):
    """FP32 scatter-add of dcols (K x N*L) into (N, Cg, *S_padded), kernel offsets in row-major order."""
    acc = np.zeros((N, Cg, *S_padded), np.float32)
    d = dcols.reshape(Cg, *R, N, *P)
    for r in itertools.product(*(range(k) for k in R)):
        sl = tuple(slice(r[i] * dilation[i], r[i] * dilation[i] + (P[i] - 1) * stride[i] + 1, stride[i])
                   for i in range(len(R)))
        view = acc[(slice(None), slice(None), *sl)]
        view += np.moveaxis(d[(slice(None), *r)], 1, 0)  # one FP32 add per element (no overlap for one r)
    return acc


def conv_backward(args, gpu, dtype):
    go, x, w, bias_sizes, stride, padding, dilation, transposed, _op, groups, mask = args
    if transposed:
        return _transposed_backward(go, x, w, stride, padding, dilation, groups, mask, gpu, dtype)
    stride, padding, dilation, R, P = _geometry(x.shape, w.shape, stride, padding, dilation)
    N, C_out, G = int(x.shape[0]), int(w.shape[0]), int(groups)
    Cg, Og, L = int(w.shape[1]), C_out // G, int(np.prod(P))
    K = Cg * int(np.prod(R))
    gon = np.moveaxis(_f32(go), 1, 0).reshape(C_out, N * L)  # (C_out, N*L), n slowest
    wn = _f32(w).reshape(C_out, K)
    xdt = torch.result_type(x, w)
    grad_x = grad_w = grad_b = None
    if mask[0]:
        S_padded = [int(x.shape[2 + i]) + 2 * padding[i] for i in range(len(P))]
        gx = np.zeros((N, int(x.shape[1]), *S_padded), np.float32)
        sc = _fp8.exponents(dtype, w, go)
        for g in range(G):
            if N * L and Og and K:
                dcols = _fp8.product(np.ascontiguousarray(wn[g * Og:(g + 1) * Og].T), gon[g * Og:(g + 1) * Og],
                                     gpu, dtype, *sc)
                gx[:, g * Cg:(g + 1) * Cg] = _col2im(dcols, N, Cg, R, P, S_padded, stride, dilation)
        crop = tuple(slice(padding[i], padding[i] + int(x.shape[2 + i])) for i in range(len(P)))
        grad_x = torch.from_numpy(np.ascontiguousarray(gx[(slice(None), slice(None), *crop)])).to(xdt)
    if mask[1]:
        gw = np.zeros((C_out, K), np.float32)
        if N * L and Og and K:
            xp, sc = _pad(_f32(x), padding), _fp8.exponents(dtype, go, x)
            for g in range(G):
                cols_t = np.ascontiguousarray(_cols(xp, g, Cg, R, P, stride, dilation).T)
                gw[g * Og:(g + 1) * Og] = _fp8.product(gon[g * Og:(g + 1) * Og], cols_t, gpu, dtype, *sc)
        grad_w = torch.from_numpy(gw.reshape(tuple(w.shape))).to(xdt)
    if mask[2]:
        grad_b = go.detach().to(torch.float32).sum(dim=[0] + list(range(2, go.dim()))).to(go.dtype)
    return grad_x, grad_w, grad_b



def _channels_by_positions(t):
    """(N, C, *S) -> FP32 (C x N*L), column index n slowest, then the positions row-major."""
    return np.ascontiguousarray(np.moveaxis(_f32(t), 1, 0).reshape(int(t.shape[1]), -1))


def _transposed_forward(x, w, bias, stride, padding, dilation, output_padding, groups, gpu, dtype):
    """conv_transpose: w (C_in, Og, *R); per group dcols = W_g^T (Og*R x Cg_in) @ x_g (Cg_in x N*L),
    then the col2im of the convolution backward (FP32, kernel offsets in row-major order), cut."""
    sp = len(x.shape) - 2
    stride, padding, dilation, output_padding = (list(v) * sp if len(v) == 1 else list(v)
                                                 for v in (stride, padding, dilation, output_padding))
    N, C_in, G = int(x.shape[0]), int(x.shape[1]), int(groups)
    Cg, Og, R, S = C_in // G, int(w.shape[1]), list(w.shape[2:]), list(x.shape[2:])
    Pt = [(S[i] - 1) * stride[i] - 2 * padding[i] + dilation[i] * (R[i] - 1) + output_padding[i] + 1
          for i in range(sp)]
    S_padded = [Pt[i] + 2 * padding[i] for i in range(sp)]
    acc = np.zeros((N, Og * G, *S_padded), np.float32)
    if N * int(np.prod(S)) and Cg and Og:
        xm, wn = _channels_by_positions(x), _f32(w).reshape(C_in, -1)
        sc = _fp8.exponents(dtype, w, x)
        for g in range(G):
            dcols = _fp8.product(np.ascontiguousarray(wn[g * Cg:(g + 1) * Cg].T), xm[g * Cg:(g + 1) * Cg],
                                 gpu, dtype, *sc)
            acc[:, g * Og:(g + 1) * Og] = _col2im(dcols, N, Og, R, S, S_padded, stride, dilation)
    crop = tuple(slice(padding[i], padding[i] + Pt[i]) for i in range(sp))
    res = torch.from_numpy(np.ascontiguousarray(acc[(slice(None), slice(None), *crop)]))
    if bias is not None:
        res = res + bias.detach().to(torch.float32).reshape(1, -1, *([1] * sp))
    return res.to(torch.result_type(x, w))


def _transposed_backward(go, x, w, stride, padding, dilation, groups, mask, gpu, dtype):
    """grad_input of conv_transpose is the plain convolution of grad_output with w (as conv_forward);
    grad_weight_g (Cg_in x Og*R) = x_g (Cg_in x N*L) @ cols(grad_output)^T (N*L x Og*R)."""
    grad_x = grad_w = grad_b = None
    if mask[0]:
        grad_x = conv_forward((go, w, None, stride, padding, dilation, False, [0], groups), gpu, dtype).to(x.dtype)
    if mask[1]:
        C_in, Og, G = int(w.shape[0]), int(w.shape[1]), int(groups)
        Cg = C_in // G
        stride_, padding_, dilation_, R, P = _geometry(go.shape, w.shape, stride, padding, dilation)
        gw = np.zeros((C_in, Og * int(np.prod(R))), np.float32)
        if int(x.shape[0]) * int(np.prod(P)) and Og:
            gp, xm = _pad(_f32(go), padding_), _channels_by_positions(x)
            sc = _fp8.exponents(dtype, x, go)
            for g in range(G):
                cols_t = np.ascontiguousarray(_cols(gp, g, Og, R, P, stride_, dilation_).T)
                gw[g * Cg:(g + 1) * Cg] = _fp8.product(xm[g * Cg:(g + 1) * Cg], cols_t, gpu, dtype, *sc)
        grad_w = torch.from_numpy(gw.reshape(tuple(w.shape))).to(torch.result_type(x, w))
    if mask[2]:
        grad_b = go.detach().to(torch.float32).sum(dim=[0] + list(range(2, go.dim()))).to(go.dtype)
    return grad_x, grad_w, grad_b


def dispatch(mode, func, args, kwargs):
    """ProductMode's hook for a convolution op, reported as its products are: on the preset of
    the running module (mode._preset(); an override of None keeps it in host FP32), with the
    outputs compared against the host's FP32 result of the same call. Under autocast the
    outputs are rounded once to the low dtype, and the forward's bias is first rounded to it, as
    autocast casts every input of a lower-precision op (the bias is then added in FP32, as for
    addmm). The rounded outputs keep the operands' dtype (FP32 for an FP32 model) instead of
    becoming bfloat16/float16 tensors: torch 1.13's conv1d/2d/3d refuse a low-precision input with
    an FP32 bias above the dispatch level, where no mode can cast it as CUDA autocast does, so a
    conv after a conv would fail. The element-wise op after a convolution therefore runs in FP32
    without the final rounding (docs/torch-autocast.md). Non-floating operands: on the host,
    warned once and reported."""
    kwargs = kwargs or {}
    name = OPS[func]
    if not all(x.is_floating_point() for x in args[:3] if isinstance(x, torch.Tensor)):
        return mode._host(func, name, args, kwargs, "non-floating operands: host arithmetic")
    t0 = time.perf_counter()
    fwd = func is _aten.convolution.default
    n = macs(func, args)
    gpu = mode._preset()
    f32 = [x.to(torch.float32) if isinstance(x, torch.Tensor) else x for x in args]
    if gpu is None:
        host = func(*f32, **kwargs)
        mode.rep.add("host_products", name, mode.module(), time.perf_counter() - t0, n)
        return host
    low = _ac.LOW[mode.dtype] if mode.autocast else None
    if low is not None and fwd and args[2] is not None:
        args = (args[0], args[1], args[2].to(low)) + tuple(args[3:])
    out = (conv_forward if fwd else conv_backward)(args, gpu, mode.dtype)
    host = func(*f32, **kwargs) if mode.compare else None  # after the emulated product (Ctrl-C)
    outs, hosts = (out,), (host,)
    if not fwd:
        outs, hosts = zip(*[(o, h) for o, h in zip(out, host or (None,) * len(out)) if o is not None]) if any(
            o is not None for o in out) else ((), ())
    if low is not None:  # rounded once to the low dtype, carried in the operands' dtype (docstring)
        outs = tuple(o.to(low).to(o.dtype) for o in outs)
        if fwd:
            out = outs[0]
        else:
            it = iter(outs)
            out = tuple(None if o is None else next(it) for o in out)
    seen = tuple(o.to(low) for o in outs) if low is not None else outs
    diff = difference(torch.cat([o.reshape(-1) for o in seen]), torch.cat([h.reshape(-1) for h in hosts])) \
        if outs and mode.compare else None
    mode.rep.add("emulated", name, mode.module(), time.perf_counter() - t0, n, diff)
    return out
