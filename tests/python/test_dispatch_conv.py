"""bf16emu.torch.emulate_products on convolutions (implicit GEMM), fp8 operands with the
per-operand power-of-two scale, Ctrl-C in a long product and the refusals (issue 43 item 1).
Every expectation is built here from torch.nn.functional.unfold/fold, hand-written scaling and
direct bf16emu.convert / bf16emu.gemm calls, not from bf16emu's own convolution code."""
import math
import os
import signal
import threading
import time
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402

import bf16emu  # noqa: E402
import bf16emu.torch as et  # noqa: E402

from dispatch_reference import PRESETS, gemm2, same_bits  # noqa: E402


def reference_conv(x4, w4, b, go4, gpu, stride, padding, dilation, groups):
    """conv2d forward and backward written out: x4 (N, C, H, W), w4 (O, C/G, kh, kw), go4 the
    output gradient. Forward: per batch element and group, W_g (Og x K) @ unfold(x)[n, group
    rows] (K x L), K = (c, kh, kw). grad_weight: gO_g (Og x N*L) @ cols^T, columns n slowest.
    grad_input: W_g^T @ gO_g[n] per batch element, then F.fold (CPU col2im: zeros, then the
    kernel offsets added in (kh, kw) order). grad_bias: sum of go over N, H, W in FP32."""
    N, C = x4.shape[:2]
    O, Cg, kh, kw = w4.shape
    Og, K = O // groups, Cg * kh * kw
    cols = F.unfold(x4, (kh, kw), dilation=dilation, padding=padding, stride=stride)  # (N, C*kh*kw, L)
    L = cols.shape[2]
    Ho, Wo = go4.shape[2:]
    wm = w4.reshape(O, K)
    gom = go4.reshape(N, O, L)
    y = torch.empty(N, O, L)
    gw = torch.empty(O, K)
    dcols = torch.empty(N, C * kh * kw, L)
    for g in range(groups):
        rows, outs = slice(g * K, (g + 1) * K), slice(g * Og, (g + 1) * Og)
        for n in range(N):
            y[n, outs] = gemm2(wm[outs], cols[n, rows], gpu)
            dcols[n, rows] = gemm2(wm[outs].t(), gom[n, outs], gpu)
        allcols = torch.cat([cols[n, rows] for n in range(N)], dim=1)  # (K, N*L), n slowest
        allgo = torch.cat([gom[n, outs] for n in range(N)], dim=1)  # (Og, N*L)
        gw[outs] = gemm2(allgo, allcols.t(), gpu)
    y = y.reshape(N, O, Ho, Wo)
    if b is not None:
        y = y + b.reshape(1, O, 1, 1)
    gx = F.fold(dcols, x4.shape[2:], (kh, kw), dilation=dilation, padding=padding, stride=stride)
    gb = go4.sum(dim=[0, 2, 3]) if b is not None else None
    return y, gx, gw.reshape(w4.shape), gb


def forward_backward(f, go):
    """A step for emulated(): y = f(), then y.backward(go); returns y's values."""
    def step():
        y = f()
        y.backward(go)
        return y.detach()
    return step


def emulated(fn, gpu, dtype="bf16"):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # autocast=False: the expectations are the FP32 products (autocast is the default for
        # bf16/fp16 since the dispatch mode gained it; test_dispatch_autocast.py covers it)
        with et.emulate_products(gpu=gpu, dtype=dtype, autocast=False) as e:
            out = fn()
    return out, e


@pytest.mark.parametrize("gpu", PRESETS)
def test_conv2d_forward_backward_bits(gpu):
    g = torch.Generator().manual_seed(1)
    x = torch.randn(2, 4, 9, 8, generator=g, requires_grad=True)
    w = torch.randn(6, 2, 3, 2, generator=g, requires_grad=True)
    b = torch.randn(6, generator=g, requires_grad=True)
    kw = dict(stride=2, padding=1, dilation=2, groups=2)
    y_ref = F.conv2d(x, w, b, **kw)
    go = torch.randn(y_ref.shape, generator=g)

    x.grad = w.grad = b.grad = None
    y, e = emulated(forward_backward(lambda: F.conv2d(x, w, b, **kw), go), gpu)
    ry, rgx, rgw, rgb = reference_conv(x.detach(), w.detach(), b.detach(), go, gpu, 2, 1, 2, 2)
    same_bits(y, ry)
    same_bits(x.grad, rgx)
    same_bits(w.grad, rgw)
    same_bits(b.grad, rgb)
    r = e.report_dict()
    assert r["emulated"]["convolution"]["calls"] == 1 and r["emulated"]["convolution_backward"]["calls"] == 1
    assert not any(k.startswith("convolution") for k in r["not_emulated"])
    # The emulation is not the host's FP32 (else the test could not fail).
    assert not torch.equal(y, y_ref.detach())


@pytest.mark.parametrize("gpu", PRESETS)
def test_conv1d_forward_backward_bits(gpu):
    g = torch.Generator().manual_seed(2)
    x = torch.randn(2, 4, 13, generator=g, requires_grad=True)
    w = torch.randn(6, 2, 3, generator=g, requires_grad=True)
    b = torch.randn(6, generator=g, requires_grad=True)
    kw = dict(stride=2, padding=1, dilation=2, groups=2)
    go = torch.randn(F.conv1d(x, w, b, **kw).shape, generator=g)

    y, _ = emulated(forward_backward(lambda: F.conv1d(x, w, b, **kw), go), gpu)
    # conv1d is conv2d on a height-1 image with a (1, k) kernel: the reference's unfold/fold.
    ry, rgx, rgw, rgb = reference_conv(x.detach().unsqueeze(2), w.detach().unsqueeze(2), b.detach(),
                                       go.unsqueeze(2), gpu, (1, 2), (0, 1), (1, 2), 2)
    same_bits(y, ry.squeeze(2))
    same_bits(x.grad, rgx.squeeze(2))
    same_bits(w.grad, rgw.squeeze(2))
    same_bits(b.grad, rgb)


def test_conv_module_no_bias_and_only_weight_grad():
    conv = torch.nn.Conv2d(3, 4, 3, padding=1, bias=False)
    x = torch.randn(2, 3, 5, 5)  # no input gradient: convolution_backward's mask is [False, True, False]
    go = torch.randn(2, 4, 5, 5)

    y, _ = emulated(forward_backward(lambda: conv(x), go), "sm90")
    ry, _, rgw, _ = reference_conv(x, conv.weight.detach(), None, go, "sm90", 1, 1, 1, 1)
    same_bits(y, ry)
    same_bits(conv.weight.grad, rgw)


@pytest.mark.parametrize("gpu", PRESETS)
def test_conv_transpose2d_forward_backward_bits(gpu):
    g = torch.Generator().manual_seed(6)
    x = torch.randn(2, 4, 4, 5, generator=g, requires_grad=True)
    w = torch.randn(4, 3, 3, 2, generator=g, requires_grad=True)  # (C_in, C_out/G, kh, kw)
    b = torch.randn(6, generator=g, requires_grad=True)
    kw = dict(stride=2, padding=1, output_padding=1, groups=2, dilation=2)
    y_host = F.conv_transpose2d(x, w, b, **kw)
    go = torch.randn(y_host.shape, generator=g)

    y, e = emulated(forward_backward(lambda: F.conv_transpose2d(x, w, b, **kw), go), gpu)
    xd, wd = x.detach(), w.detach()
    N, Cg, L, K = 2, 2, 4 * 5, 3 * 3 * 2
    # Forward: per batch element and group, W_g^T (Og*kh*kw x Cg) @ x_g (Cg x L), then F.fold
    # (CPU col2im, kernel offsets in order), output size taken from the host's result.
    dcols = torch.empty(N, 6 * 3 * 2, L)
    for grp in range(2):
        wg = wd[grp * Cg:(grp + 1) * Cg].reshape(Cg, K)
        for n in range(N):
            dcols[n, grp * K:(grp + 1) * K] = gemm2(wg.t(), xd[n, grp * Cg:(grp + 1) * Cg].reshape(Cg, L), gpu)
    ry = F.fold(dcols, y_host.shape[2:], (3, 2), dilation=2, padding=1, stride=2) + b.detach().reshape(1, 6, 1, 1)
    same_bits(y, ry)
    # grad_input: the plain convolution of go with w (groups 2), by the conv2d reference above.
    dummy = torch.zeros(2, 4, 4, 5)
    rgx, *_ = reference_conv(go, wd, None, dummy, gpu, 2, 1, 2, 2)
    same_bits(x.grad, rgx)
    # grad_weight: x_g (Cg x N*L) @ unfold(go)_g^T (N*L x Og*kh*kw), n slowest.
    cols = F.unfold(go, (3, 2), dilation=2, padding=1, stride=2)  # (N, 6*3*2, L)
    rgw = torch.empty(4, K)
    for grp in range(2):
        xg = torch.cat([xd[n, grp * Cg:(grp + 1) * Cg].reshape(Cg, L) for n in range(N)], dim=1)
        cg = torch.cat([cols[n, grp * K:(grp + 1) * K] for n in range(N)], dim=1)
        rgw[grp * Cg:(grp + 1) * Cg] = gemm2(xg, cg.t(), gpu)
    same_bits(w.grad, rgw.reshape(w.shape))
    same_bits(b.grad, go.sum(dim=[0, 2, 3]))
    assert e.report_dict()["emulated"]["convolution"]["calls"] == 1 and not e.report_dict()["not_emulated"]
    assert not torch.equal(y, y_host.detach())


def fp8_exponent(t, fmt):
    """The scale rule written out: the exponent e of the scale 2^e of a whole tensor, the largest
    power of two with amax * 2^e <= fmt_max."""
    fmax = {"e4m3": 448.0, "e5m2": 57344.0}[fmt]
    amax = float(t.detach().abs().max())
    e = 0
    if amax > 0:
        e = math.floor(math.log2(fmax / amax))
        while amax * 2.0 ** e > fmax:
            e -= 1
        while amax * 2.0 ** (e + 1) <= fmax:
            e += 1
    return e


def fp8_reference(a, b, gpu, fmt, kind=None):
    """The product with each operand scaled by 2^fp8_exponent, rounded to fmt, on the preset."""
    def quant(t):
        e = fp8_exponent(t, fmt)
        t = t.detach().float().contiguous().numpy()
        q = bf16emu.convert((t * np.float32(2.0 ** e)).astype(np.float32), to=fmt, saturate=True)
        return np.asarray(q), e

    qa, ea = quant(a)
    qb, eb = quant(b)
    extra = {"kind": kind} if kind else {}
    d = np.asarray(bf16emu.gemm(qa, qb, arch=gpu, a_format=fmt, threads=1, **extra), dtype=np.float32)
    return torch.from_numpy((d * np.float32(2.0 ** -(ea + eb))).astype(np.float32))


# sm100's default tcgen05 kind takes no fp8: the mode uses tcgen05 kind::f8f6f4 there.
@pytest.mark.parametrize("gpu,fmt,kind", [("sm89", "e4m3", None), ("sm90", "e4m3", None), ("sm90", "e5m2", None),
                                          ("sm120", "e4m3", None), ("sm100", "e4m3", "f8f6f4"),
                                          ("sm100", "e5m2", "f8f6f4")])
def test_fp8_mm_scaled_bits(gpu, fmt, kind):
    g = torch.Generator().manual_seed(3)
    a = torch.randn(17, 40, generator=g) * 0.01
    b = torch.randn(40, 9, generator=g) * 1000
    y, e = emulated(lambda: a @ b, gpu, fmt)
    same_bits(y, fp8_reference(a, b, gpu, fmt, kind))
    assert e.report_dict()["dtype"] == fmt
    # Without the scale, a's values (~0.01) would lose most bits in e4m3: the scale matters.
    assert not torch.equal(y, a @ b)


def test_fp8_zero_operand_scale_one():
    a = torch.zeros(4, 8)
    b = torch.randn(8, 3)
    y, _ = emulated(lambda: a @ b, "sm90", "e4m3")
    same_bits(y, torch.zeros(4, 3))


@pytest.mark.parametrize("gpu,dtype", [("sm80", "e4m3"), ("sm75", "e5m2"), ("sm86", "e4m3")])
def test_fp8_preset_without_fp8_path_refused(gpu, dtype):
    with pytest.raises(ValueError, match=r"argument 'gpu'.*sm89, sm90, sm100, sm120"):
        et.emulate_products(gpu=gpu, dtype=dtype)


@pytest.mark.parametrize("dtype", ["bf16", "e4m3"])
def test_unknown_preset_refused(dtype):
    with pytest.raises(ValueError, match="argument 'gpu'"):
        et.emulate_products(gpu="sm999", dtype=dtype)


def test_unknown_dtype_refused():
    with pytest.raises(ValueError, match="argument 'dtype'.*e4m3"):
        et.emulate_products(gpu="sm90", dtype="e3m4")


def fp8_gemm(a, b, ea, eb, gpu, fmt):
    qa = bf16emu.convert((a.detach().float().numpy() * np.float32(2.0 ** ea)).astype(np.float32), to=fmt,
                         saturate=True)
    qb = bf16emu.convert((b.detach().float().numpy() * np.float32(2.0 ** eb)).astype(np.float32), to=fmt,
                         saturate=True)
    d = np.asarray(bf16emu.gemm(np.asarray(qa), np.asarray(qb), arch=gpu, a_format=fmt, threads=1), np.float32)
    return torch.from_numpy((d * np.float32(2.0 ** -(ea + eb))).astype(np.float32))


def test_fp8_bmm_one_scale_per_tensor():
    g = torch.Generator().manual_seed(7)
    a = torch.randn(3, 5, 16, generator=g) * torch.tensor([1.0, 1e-3, 30.0]).reshape(3, 1, 1)
    b = torch.randn(3, 16, 4, generator=g)
    y, _ = emulated(lambda: torch.bmm(a, b), "sm90", "e4m3")
    ea, eb = fp8_exponent(a, "e4m3"), fp8_exponent(b, "e4m3")
    ref = torch.stack([fp8_gemm(a[i], b[i], ea, eb, "sm90", "e4m3") for i in range(3)])
    same_bits(y, ref)
    # Scaling each slice on its own would give other bits (slice 1 is 1000x smaller).
    assert not torch.equal(y[1], fp8_reference(a[1], b[1], "sm90", "e4m3"))


def test_conv_under_fp8_dtype_one_scale_per_tensor():
    g = torch.Generator().manual_seed(8)
    # Group 0's channels are 1000x smaller than group 1's: a per-group scale would differ.
    x = torch.randn(1, 4, 6, 6, generator=g) * torch.tensor([1e-3, 1e-3, 1.0, 1.0]).reshape(1, 4, 1, 1)
    w = torch.randn(4, 2, 3, 3, generator=g)
    y, e = emulated(lambda: F.conv2d(x, w, groups=2), "sm90", "e4m3")
    cols = F.unfold(x, 3)[0]  # (4*9, 16), group g's rows g*18:(g+1)*18
    ex, ew = fp8_exponent(x, "e4m3"), fp8_exponent(w, "e4m3")
    ref = torch.cat([fp8_gemm(w[2 * k:2 * k + 2].reshape(2, 18), cols[18 * k:18 * (k + 1)], ew, ex, "sm90", "e4m3")
                     for k in range(2)])
    same_bits(y.reshape(4, 16), ref)
    assert e.report_dict()["emulated"]["convolution"]["calls"] == 1


def test_ctrl_c_interrupts_long_product():
    def product(n):
        x = torch.randn(n, n)
        with et.emulate_products(gpu="sm90", dtype="bf16", autocast=False):
            t0 = time.perf_counter()
            x @ x
            return time.perf_counter() - t0

    # The rate is the best of three warm 512^3 products: a cold first call (CI of 3057ca6), or one
    # short call slowed down by other jobs (the full tier under ctest -j2, twice on 2026-11-29),
    # gave a rate many times too slow, so that the "6 s" product ended near the signal.
    product(128)
    per_mac = min(product(512) for _ in range(3)) / 512 ** 3
    # A square product that should take about 6 s; SIGINT after 0.5 s. A product that still ends
    # before the signal, or whose signal lands just after it ended ("late"), is too short to tell:
    # the side is doubled, twice at most.
    n = max(256, min(int(round((6.0 / per_mac) ** (1 / 3))), 4096))
    tries = []
    for attempt in range(3):
        x = torch.randn(n, n)
        sent, outcome, took = [], "finished", None

        def fire():
            sent.append(time.perf_counter())
            os.kill(os.getpid(), signal.SIGINT)

        timer = threading.Timer(0.5, fire)
        try:
            with et.emulate_products(gpu="sm90", dtype="bf16", autocast=False):
                timer.start()
                try:
                    x @ x
                except KeyboardInterrupt:
                    outcome = "interrupted"
                    took = time.perf_counter() - sent[0]
            timer.cancel()
            timer.join()  # a signal sent by now is handled at the next line, inside this try
            outcome = outcome if outcome == "interrupted" or not sent else "late"
        except KeyboardInterrupt:
            outcome = "late"
        tries.append((n, outcome, took, round(per_mac * n ** 3, 1)))
        if outcome == "interrupted":
            break
        n = min(2 * n, 8192)
    assert outcome == "interrupted", f"(side, outcome, s after the signal, estimated s): {tries}"
    assert took < 1.0, f"interrupted, but late: {tries}"  # within ~1 s of the signal


def test_conv3d_forward_and_weight_grad_bits():
    """3-d: the im2col matrix built by explicit loops here (K = (c, kd, kh, kw))."""
    g = torch.Generator().manual_seed(5)
    x = torch.randn(1, 2, 4, 5, 4, generator=g)
    w = torch.randn(3, 2, 2, 3, 2, generator=g, requires_grad=True)
    go = torch.randn(F.conv3d(x, w, stride=(1, 2, 1), padding=1).shape, generator=g)

    y, _ = emulated(forward_backward(lambda: F.conv3d(x, w, stride=(1, 2, 1), padding=1), go), "sm90")
    xp = F.pad(x, (1, 1, 1, 1, 1, 1))[0]
    D, H, W = go.shape[2:]
    cols = torch.empty(2 * 2 * 3 * 2, D * H * W)
    for c in range(2):
        for kd in range(2):
            for kh in range(3):
                for kw in range(2):
                    k = ((c * 2 + kd) * 3 + kh) * 2 + kw
                    for d in range(D):
                        for h in range(H):
                            for ww in range(W):
                                cols[k, (d * H + h) * W + ww] = xp[c, d + kd, 2 * h + kh, ww + kw]
    same_bits(y.reshape(3, -1), gemm2(w.detach().reshape(3, -1), cols, "sm90"))
    same_bits(w.grad.reshape(3, -1), gemm2(go.reshape(3, -1), cols.t(), "sm90"))


@pytest.mark.parametrize("gpu,dtype,arg", [("sm999", "bf16", "gpu"), ("sm80", "e4m3", "gpu"), ("sm90", "fp8", "dtype")])
def test_conv_model_refused_naming_the_argument(gpu, dtype, arg):
    model = torch.nn.Sequential(torch.nn.Conv2d(2, 3, 3), torch.nn.ReLU())
    with pytest.raises(ValueError, match=f"argument '{arg}'"):
        et.emulate(model, gpu=gpu, dtype=dtype)
    assert not getattr(model, "_bf16emu_products", False)  # nothing left marked on the model


def test_small_cnn_trains_with_every_product_emulated():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(1, 4, 3, padding=1), torch.nn.ReLU(),
                                torch.nn.Conv2d(4, 4, 3, stride=2, groups=2), torch.nn.Flatten(),
                                torch.nn.Linear(4 * 3 * 3, 2))
    x = torch.randn(3, 1, 8, 8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        em = et.emulate(model, gpu="sm100", dtype="bf16")
        with em as m:
            loss = m(x).square().mean()
            loss.backward()
    rep = em.report_dict()
    assert rep["emulated"]["convolution"]["calls"] == 2
    assert rep["emulated"]["convolution_backward"]["calls"] == 2
    assert not any("convolution" in k or k in ("mm", "addmm") for k in rep["not_emulated"])
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in model.parameters())


@pytest.mark.parametrize("gpu", PRESETS)
def test_conv2d_under_autocast_rounds_outputs_once(gpu):
    """autocast (the default for bf16): the outputs are the FP32-accumulated products rounded once
    to bf16, the bias rounded to bf16 before it is added (autocast casts every input), carried
    in FP32 (docs/torch-autocast.md); every gradient rounded once to bf16 as well."""
    g = torch.Generator().manual_seed(7)
    x = torch.randn(2, 4, 9, 8, generator=g, requires_grad=True)
    w = torch.randn(6, 2, 3, 2, generator=g, requires_grad=True)
    b = torch.randn(6, generator=g, requires_grad=True)
    kw = dict(stride=2, padding=1, dilation=2, groups=2)
    go = torch.randn(F.conv2d(x, w, b, **kw).shape, generator=g)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with et.emulate_products(gpu=gpu, dtype="bf16") as e:
            y = F.conv2d(x, w, b, **kw)
            y.backward(go)
    assert e.report_dict()["autocast"] is True and y.dtype == torch.float32
    ry, rgx, rgw, rgb = reference_conv(x.detach(), w.detach(), None, go, gpu, 2, 1, 2, 2)
    bf = lambda t: t.to(torch.bfloat16).to(torch.float32)  # noqa: E731
    same_bits(y.detach(), bf(ry + bf(b.detach()).reshape(1, 6, 1, 1)))
    same_bits(x.grad, bf(rgx))
    same_bits(w.grad, bf(rgw))
    same_bits(b.grad, bf(go.sum(dim=[0, 2, 3])))
    assert not torch.equal(y.detach(), ry + b.detach().reshape(1, 6, 1, 1))  # the roundings are seen
