"""bf16emu.torch.emulate_products on convolutions (issue 43 item 1): forward and backward equal,
bit for bit, a reference written here: im2col by torch.nn.functional.unfold, the products by direct
bf16emu.gemm calls, col2im by explicit loops in the order docs/torch-convolution.md states."""
import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402

import bf16emu  # noqa: E402
import bf16emu.torch as et  # noqa: E402

PRESETS = ["sm80", "sm90", "sm100"]
STRIDE, PAD, DIL, GROUPS = 2, 1, 2, 2


def gemm2(a, b, gpu, dtype="bf16"):
    a = a.detach().float().contiguous().numpy()
    b = b.detach().float().contiguous().numpy()
    d = bf16emu.gemm(np.asarray(bf16emu.convert(a, to=dtype)), np.asarray(bf16emu.convert(b, to=dtype)),
                     arch=gpu, a_format=dtype, threads=1)
    return torch.from_numpy(np.asarray(d, dtype=np.float32).copy())


def same_bits(x, y):
    assert x.shape == y.shape and x.dtype == y.dtype == torch.float32, (x.shape, y.shape, x.dtype, y.dtype)
    assert torch.equal(x.contiguous().view(torch.int32), y.contiguous().view(torch.int32))


def r(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def reference(x4, w4, b, gout4, gpu):
    """2-d reference (conv1d passes H = 1 tensors): y, grad_x, grad_w, grad_b."""
    N, C, H, W = x4.shape
    O, cg, kh, kw = w4.shape
    og, KK = O // GROUPS, kh * kw
    st = (1, STRIDE) if H == 1 else (STRIDE, STRIDE)
    pd = (0, PAD) if H == 1 else (PAD, PAD)
    dl = (1, DIL) if H == 1 else (DIL, DIL)
    cols = F.unfold(x4, (kh, kw), dilation=dl, padding=pd, stride=st)  # (N, C*KK, L), K = (c, kh, kw)
    L = cols.shape[2]
    Ho = (H + 2 * pd[0] - dl[0] * (kh - 1) - 1) // st[0] + 1
    Wo = (W + 2 * pd[1] - dl[1] * (kw - 1) - 1) // st[1] + 1
    assert Ho * Wo == L
    B = cols.permute(1, 0, 2).reshape(C * KK, N * L)
    wm = w4.reshape(O, cg * KK)
    ys, gxs, gws = [], [], []
    gm = gout4.permute(1, 0, 2, 3).reshape(O, N * L)
    for g in range(GROUPS):
        rows = slice(g * cg * KK, (g + 1) * cg * KK)
        ys.append(gemm2(wm[g * og:(g + 1) * og], B[rows], gpu))
        gxs.append(gemm2(wm[g * og:(g + 1) * og].t(), gm[g * og:(g + 1) * og], gpu))
        gws.append(gemm2(gm[g * og:(g + 1) * og], B[rows].t(), gpu))
    y = torch.cat(ys).reshape(O, N, Ho, Wo).permute(1, 0, 2, 3) + b.reshape(1, O, 1, 1)
    gcols = torch.cat(gxs).reshape(C, kh, kw, N, Ho, Wo)
    gpad = torch.zeros(N, C, H + 2 * pd[0], W + 2 * pd[1])
    for i in range(kh):  # kernel offsets in lexicographic order, one FP32 add each
        for j in range(kw):
            for p in range(Ho):
                for q in range(Wo):
                    gpad[:, :, p * st[0] + i * dl[0], q * st[1] + j * dl[1]] += gcols[:, i, j, :, p, q].t()
    gx = gpad[:, :, pd[0]:pd[0] + H, pd[1]:pd[1] + W]
    gw = torch.cat(gws).reshape(w4.shape)
    gb = gout4.sum(dim=(0, 2, 3))
    return y, gx, gw, gb


def under_mode(fn, gpu, dtype="bf16"):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with et.emulate_products(gpu=gpu, dtype=dtype) as e:
            out = fn()
    return out, e


def run_conv(conv, x, w, b, gout, gpu):
    x, w, b = (t.clone().requires_grad_(True) for t in (x, w, b))

    def fn():
        y = conv(x, w, b, stride=STRIDE, padding=PAD, dilation=DIL, groups=GROUPS)
        y.backward(gout)
        return y.detach()
    y, e = under_mode(fn, gpu)
    return y, x.grad, w.grad, b.grad, e


@pytest.mark.parametrize("gpu", PRESETS)
def test_conv2d_forward_backward(gpu):
    x, w, b = r(2, 4, 9, 8, seed=1), r(6, 2, 3, 3, seed=2), r(6, seed=3)
    y0 = F.conv2d(x, w, b, stride=STRIDE, padding=PAD, dilation=DIL, groups=GROUPS)
    gout = r(*y0.shape, seed=4)
    y, gx, gw, gb, e = run_conv(F.conv2d, x, w, b, gout, gpu)
    ry, rgx, rgw, rgb = reference(x, w, b, gout, gpu)
    same_bits(y, ry)
    same_bits(gx, rgx)
    same_bits(gw, rgw)
    same_bits(gb, rgb)
    assert not torch.equal(y, y0)  # the host's FP32 convolution differs: the check can fail
    rep = e.report_dict()["emulated"]
    assert rep["convolution"]["calls"] == 1 and rep["convolution_backward"]["calls"] == 1


@pytest.mark.parametrize("gpu", PRESETS)
def test_conv1d_forward_backward(gpu):
    x, w, b = r(2, 4, 13, seed=5), r(6, 2, 3, seed=6), r(6, seed=7)
    y0 = F.conv1d(x, w, b, stride=STRIDE, padding=PAD, dilation=DIL, groups=GROUPS)
    gout = r(*y0.shape, seed=8)
    y, gx, gw, gb, _ = run_conv(F.conv1d, x, w, b, gout, gpu)
    ry, rgx, rgw, rgb = reference(x[:, :, None], w[:, :, None], b, gout[:, :, None], gpu)
    same_bits(y, ry[:, :, 0])
    same_bits(gx, rgx[:, :, 0])
    same_bits(gw, rgw[:, :, 0])
    same_bits(gb, rgb)


def test_conv_module_and_refusals():
    conv = torch.nn.Conv2d(4, 6, 3, padding=1, groups=2)
    x = r(2, 4, 5, 5, seed=9)
    y, e = under_mode(lambda: conv(x).detach(), "sm90")
    assert e.report_dict()["emulated"]["convolution"]["calls"] == 1
    x0, w0, b0 = torch.zeros(0, 4, 9, 8), r(6, 2, 3, 3, seed=11), r(6, seed=12)  # empty batch
    y0, gx0, gw0, gb0, _ = run_conv(F.conv2d, x0, w0, b0, torch.zeros(0, 6, 4, 3), "sm90")
    assert y0.shape == (0, 6, 4, 3) and gx0.shape == x0.shape
    assert not gw0.any() and not gb0.any()
    with pytest.raises(ValueError, match="argument 'gpu'"):
        et.emulate_products(gpu="sm7", dtype="bf16")
    with pytest.raises(ValueError, match="argument 'dtype'"):
        et.emulate_products(gpu="sm90", dtype="int4")
    with pytest.raises(NotImplementedError, match="transposed"):
        under_mode(lambda: F.conv_transpose2d(x, r(4, 3, 3, 3, seed=10)), "sm90")


# ---- fp8 operands with a per-tensor power-of-two scale (docs/torch-convolution.md, "FP8 operands")
FP8_MAX = {"e4m3": 448.0, "e5m2": 57344.0}


def fp8_reference(a, b, gpu, fmt):
    """Scale each operand by 2**floor(log2(max/amax)) (1 if amax == 0), round with
    bf16emu.convert, one direct bf16emu.gemm, times 1/(sa*sb) in FP32."""
    def scaled(x):
        x = x.detach().float().contiguous().numpy()
        amax = float(np.abs(x).max())
        s = 1.0 if amax == 0 else float(2.0 ** np.floor(np.log2(FP8_MAX[fmt] / amax)))
        return np.asarray(bf16emu.convert(x * np.float32(s), to=fmt)), s
    (a8, sa), (b8, sb) = scaled(a), scaled(b)
    kw = {"kind": "f8f6f4", "b_format": fmt} if gpu == "sm100" else {}
    d = np.asarray(bf16emu.gemm(a8, b8, arch=gpu, a_format=fmt, threads=1, **kw), dtype=np.float32)
    return torch.from_numpy(d * np.float32(1.0 / (sa * sb)))


@pytest.mark.parametrize("gpu,fmt", [("sm89", "e4m3"), ("sm90", "e4m3"), ("sm100", "e4m3"), ("sm90", "e5m2"),
                                     ("sm120", "e5m2")])
def test_fp8_mm(gpu, fmt):
    a, b = r(5, 37, seed=11) * 300, r(37, 3, seed=12) * 1e-3
    y, e = under_mode(lambda: torch.mm(a, b), gpu, fmt)
    same_bits(y, fp8_reference(a, b, gpu, fmt))
    assert e.report_dict()["emulated"]["mm"]["calls"] == 1
    yb, _ = under_mode(lambda: torch.mm(a, b), "sm90", "bf16")
    assert not torch.equal(y, yb)  # fp8 rounding shows: the check can fail
    z = torch.zeros(4, 37)  # amax 0: scale 1, result zeros
    yz, _ = under_mode(lambda: z @ b, gpu, fmt)
    same_bits(yz, fp8_reference(z, b, gpu, fmt))


def test_fp8_conv2d_forward():
    # Each group's GEMM gets its own operand scales (weight_g and columns_g are the two operands).
    x, w = r(2, 4, 9, 8, seed=13), r(6, 2, 3, 3, seed=14)
    y, _ = under_mode(lambda: F.conv2d(x, w, None, stride=STRIDE, padding=PAD, dilation=DIL, groups=GROUPS),
                      "sm90", "e4m3")
    cols = F.unfold(x, (3, 3), dilation=DIL, padding=PAD, stride=STRIDE)
    L = cols.shape[2]
    B = cols.permute(1, 0, 2).reshape(4 * 9, 2 * L)
    wm = w.reshape(6, 2 * 9)
    ref = torch.cat([fp8_reference(wm[3 * g:3 * g + 3], B[18 * g:18 * g + 18], "sm90", "e4m3") for g in range(2)])
    same_bits(y, ref.reshape(6, 2, *y.shape[2:]).permute(1, 0, 2, 3))


def test_fp8_refusals():
    for gpu in ("sm70", "sm80", "sm86"):
        with pytest.raises(ValueError, match="argument 'gpu'.*sm89, sm90, sm100, sm120"):
            et.emulate_products(gpu=gpu, dtype="e4m3")
    with pytest.raises(ValueError, match="argument 'gpu'"):
        et.emulate_products(gpu="sm7", dtype="e5m2")
    with pytest.raises(ValueError, match="argument 'dtype'"):
        et.emulate_products(gpu="sm90", dtype="e3m4")


# ---- Ctrl-C during a long product under the mode
CTRL_C = textwrap.dedent("""
    import os, signal, threading, time, warnings
    import torch, bf16emu.torch as et
    a, b = torch.ones(4096, 2048), torch.ones(2048, 2048)  # 2^34 MACs: seconds on any core count here
    with et.emulate_products(gpu="sm90", dtype="bf16"):
        torch.ones(2, 2) @ torch.ones(2, 2)  # imports and first-call costs outside the timing
        threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
        t0 = time.monotonic()
        try:
            torch.mm(a, b)
        except KeyboardInterrupt:
            print(f"interrupted after {time.monotonic() - t0:.3f} s")
        else:
            print(f"not interrupted ({time.monotonic() - t0:.3f} s)")
""")


def test_ctrl_c_interrupts_a_product_under_the_mode():
    # SIGINT 0.5 s into a product of several seconds: KeyboardInterrupt reaches the caller within
    # about 1 s of the signal (the gemm checks for signals between chunks of rows, every 50 ms).
    r = subprocess.run([sys.executable, "-c", CTRL_C], capture_output=True, text=True, env=os.environ, timeout=300)
    assert r.returncode == 0, r.stderr[-800:]
    assert r.stdout.startswith("interrupted after"), r.stdout + r.stderr[-500:]
    assert float(r.stdout.split()[2]) < 0.5 + 1.0, r.stdout
