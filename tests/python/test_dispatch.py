"""bf16emu.torch.emulate_products (issue 43): every product under the mode equals a direct
bf16emu.gemm on the operands rounded to the dtype, slice by slice; a tiny model's output and
gradients equal a hand-written chain of bf16emu.gemm calls."""
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402

import bf16emu  # noqa: E402
import bf16emu.torch as et  # noqa: E402

from dispatch_reference import PRESETS, gemm2, same_bits  # noqa: E402


def batched(a, b, gpu, dtype="bf16"):
    return torch.stack([gemm2(a[i], b[i], gpu, dtype) for i in range(a.shape[0])])


def run(fn, gpu, dtype="bf16"):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with et.emulate_products(gpu=gpu, dtype=dtype, autocast=False):
            return fn()


def r(*shape, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g)


@pytest.mark.parametrize("gpu", PRESETS)
def test_two_d_products(gpu):
    a, b = r(5, 37, seed=1), r(37, 3, seed=2)  # K = 37: not a multiple of any block
    same_bits(run(lambda: torch.mm(a, b), gpu), gemm2(a, b, gpu))
    same_bits(run(lambda: a @ b, gpu), gemm2(a, b, gpu))
    bt = r(3, 37, seed=3)  # transposed view
    same_bits(run(lambda: a @ bt.t(), gpu), gemm2(a, bt.t(), gpu))
    an = r(5, 74, seed=4)[:, ::2]  # non-contiguous
    same_bits(run(lambda: an @ b, gpu), gemm2(an, b, gpu))
    one = r(1, 1, seed=5)
    same_bits(run(lambda: one @ one, gpu), gemm2(one, one, gpu))
    e = torch.zeros(0, 4)
    same_bits(run(lambda: e @ r(4, 3), gpu), torch.zeros(0, 3))
    same_bits(run(lambda: torch.zeros(2, 0) @ torch.zeros(0, 3), gpu), torch.zeros(2, 3))


@pytest.mark.parametrize("gpu", PRESETS)
def test_addmm_bias_after_the_product(gpu):
    bias, a, b = r(6, seed=6), r(4, 33, seed=7), r(33, 6, seed=8)
    p = gemm2(a, b, gpu)
    same_bits(run(lambda: torch.addmm(bias, a, b), gpu), p + bias)
    same_bits(run(lambda: torch.addmm(bias, a, b, beta=0.5, alpha=2.0), gpu), 2.0 * p + 0.5 * bias)
    nan = torch.full((6,), float("nan"))
    same_bits(run(lambda: torch.addmm(nan, a, b, beta=0), gpu), p)  # beta = 0: bias not read
    w = r(6, 33, seed=9)
    same_bits(run(lambda: F.linear(a, w, bias), gpu), gemm2(a, w.t(), gpu) + bias)


@pytest.mark.parametrize("gpu", PRESETS)
def test_batched_products(gpu):
    a, b = r(3, 4, 19, seed=10), r(3, 19, 5, seed=11)
    same_bits(run(lambda: torch.bmm(a, b), gpu), batched(a, b, gpu))
    c = r(3, 4, 5, seed=12)
    same_bits(run(lambda: torch.baddbmm(c, a, b, beta=0.25, alpha=3.0), gpu), 3.0 * batched(a, b, gpu) + 0.25 * c)
    q, k = r(2, 3, 4, 8, seed=13), r(2, 3, 6, 8, seed=14)
    want = batched(q.reshape(6, 4, 8), k.transpose(-2, -1).reshape(6, 8, 6), gpu).reshape(2, 3, 4, 6)
    same_bits(run(lambda: q @ k.transpose(-2, -1), gpu), want)
    same_bits(run(lambda: torch.einsum("bhqd,bhkd->bhqk", q, k), gpu), want)
    w = r(8, 5, seed=15)  # broadcast: (2, 3, 4, 8) @ (8, 5) folds into one 24 x 8 product
    same_bits(run(lambda: q @ w, gpu), gemm2(q.reshape(24, 8), w, gpu).reshape(2, 3, 4, 5))


@pytest.mark.parametrize("threads", [1, 2, 3, 5])
def test_batched_products_cut_into_chunks(threads):
    # A bmm runs as one call of the kernel, its products cut into chunks of rows (one per worker,
    # never across two products) that share the workers: 2 x 200 rows give one chunk per product
    # on 1 or 2 threads, 134 + 66 rows on 3, 80 + 80 + 40 on 5. The bits of every slice equal a
    # direct bf16emu.gemm of that slice alone.
    a, b = r(2, 200, 37, seed=40), r(2, 37, 29, seed=41)
    want = batched(a, b, "sm90")
    old = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        got = run(lambda: torch.bmm(a, b), "sm90")
    finally:
        torch.set_num_threads(old)
    same_bits(got, want)
    e = torch.zeros(2, 3, 0)  # K = 0: D = +0, as gemm gives
    same_bits(run(lambda: torch.bmm(e, torch.zeros(2, 0, 4)), "sm90"), torch.zeros(2, 3, 4))
    same_bits(run(lambda: torch.bmm(torch.zeros(0, 3, 2), torch.zeros(0, 2, 4)), "sm90"), torch.zeros(0, 3, 4))


@pytest.mark.parametrize("dtype", ["fp16", "tf32"])
def test_other_dtypes(dtype):
    a, b = r(6, 21, seed=16), r(21, 7, seed=17)
    same_bits(run(lambda: a @ b, "sm90", dtype), gemm2(a, b, "sm90", dtype))
    assert not torch.equal(gemm2(a, b, "sm90", dtype), gemm2(a, b, "sm90", "bf16"))


class Tiny(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.l1, self.l2 = torch.nn.Linear(8, 16), torch.nn.Linear(16, 8)

    def forward(self, x):  # x: (B, T, 8)
        h = torch.relu(self.l1(x))
        q = k = v = self.l2(h)
        att = (q @ k.transpose(-2, -1)) * 0.5
        att = att.softmax(-1)
        return (att @ v).sum()


def by_hand(m, x, gpu):
    """Forward and backward of Tiny with every product a direct bf16emu.gemm (2-d slices)."""
    B, T, _ = x.shape
    W1, b1, W2, b2 = (p.detach() for p in (m.l1.weight, m.l1.bias, m.l2.weight, m.l2.bias))
    X = x.reshape(B * T, 8)
    z1 = gemm2(X, W1.t(), gpu) + b1
    h = torch.relu(z1)
    s = gemm2(h, W2.t(), gpu) + b2  # q = k = v
    s3 = s.reshape(B, T, 8)
    att = batched(s3, s3.transpose(-2, -1), gpu) * 0.5
    p = att.softmax(-1)
    y = batched(p, s3, gpu).sum()
    g_y = torch.ones(B, T, 8)
    g_p = batched(g_y, s3.transpose(-2, -1), gpu)  # d(p @ v)/dp
    g_v = batched(p.transpose(-2, -1), g_y, gpu)
    g_att = torch._softmax_backward_data(g_p, p, -1, torch.float32) * 0.5
    g_q = batched(g_att, s3, gpu)  # d(q @ kT)/dq = g kT^T
    g_k = batched(s3.transpose(-2, -1), g_att, gpu).transpose(-2, -1)
    g_s = (g_v + g_q + g_k).reshape(B * T, 8)
    return y, g_s, h, X, z1, W2


@pytest.mark.parametrize("gpu", PRESETS)
def test_tiny_model_forward_and_gradients(gpu):
    m, x = Tiny(), r(2, 5, 8, seed=18)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with et.emulate_products(gpu=gpu, dtype="bf16", model=m, autocast=False) as e:
            y = m(x)
            y.backward()
    y_h, g_s, h, X, z1, W2 = by_hand(m, x, gpu)
    same_bits(y, y_h)
    # The backward's products as autograd forms them: g_W = g^T @ input, g_input = g @ W.
    same_bits(m.l2.weight.grad, gemm2(g_s.t(), h, gpu))
    same_bits(m.l2.bias.grad, g_s.sum(0))
    g_h = gemm2(g_s, W2, gpu)
    g_z1 = torch.where(z1 > 0, g_h, torch.zeros(()))  # relu's backward
    same_bits(m.l1.weight.grad, gemm2(g_z1.t(), X, gpu))
    same_bits(m.l1.bias.grad, g_z1.sum(0))
    rep = e.report_dict()["emulated"]
    # Forward: 2 addmm (the Linear layers, input folded to 2-d) + 2 bmm; backward: 3 mm (x needs no
    # grad) + 4 bmm.
    assert {k: v["calls"] for k, v in rep.items()} == {"addmm": 2, "mm": 3, "bmm": 6}


def test_unemulated_op_is_reported_and_warned():
    x = r(4, 3, seed=19)
    with pytest.warns(UserWarning, match="aten.cumsum is not emulated"):
        with et.emulate_products(gpu="sm80", autocast=False) as e:
            torch.cumsum(x @ x.t(), 0)
    assert e.report_dict()["not_emulated"]["cumsum"]["calls"] == 1
    # Convolutions are emulated now (test_dispatch_conv.py); a pooling op is not.
    with pytest.warns(UserWarning, match="aten.avg_pool2d is not emulated"):
        with et.emulate_products(gpu="sm90", autocast=False) as e2:
            F.avg_pool1d(r(1, 2, 8), 2)
    assert e2.report_dict()["not_emulated"]["avg_pool2d"]["calls"] == 1 and e2.report_dict()["emulated"] == {}
    assert "aten.cumsum" in e.report() and "aten.mm" in e.report()
    mm = e.report_dict()["emulated"]["mm"]
    assert (mm["calls"], mm["macs"]) == (1, 4 * 3 * 4)


def test_bad_input():
    with pytest.raises(ValueError, match="argument 'gpu'"):
        et.emulate_products(gpu="sm1234")
    with pytest.raises(ValueError, match="argument 'dtype'"):
        et.emulate_products(gpu="sm90", dtype="fp8")
    with pytest.raises(TypeError, match="argument 'gpu'"):
        et.emulate_products(gpu=90)
    with pytest.raises(TypeError, match="argument 'model'"):
        et.emulate_products(model="net")
    m = Tiny()
    with et.emulate_products(gpu="sm90", model=m):
        with pytest.raises(RuntimeError, match="argument 'model'.*already active"):
            with et.emulate_products(gpu="sm80", model=m):
                pass
    h = et.emulate_products(gpu="sm90")
    with h:
        pass
    with pytest.raises(RuntimeError, match="already entered"):
        with h:
            pass


def test_emulate_model_with_gpu():
    """emulate(model, gpu=, dtype=): the same products as emulate_products, forward and backward."""
    m, x = Tiny(), r(2, 5, 8, seed=20)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        em = et.emulate(m, gpu="sm90", dtype="bf16", autocast=False)
        with em as model:
            y = model(x)
            y.backward()
    assert em.report_dict()["emulated"]["bmm"]["calls"] == 6 and "aten.addmm" in em.report()
    y_h, g_s, h_act, *_ = by_hand(m, x, "sm90")
    same_bits(y, y_h)
    same_bits(m.l2.weight.grad, gemm2(g_s.t(), h_act, "sm90"))
    with pytest.raises(ValueError, match="argument 'gpu'"):
        et.emulate(m, gpu="sm90", linear="sm90")
    with pytest.raises(ValueError, match="argument 'dtype'"):
        et.emulate(m, gpu="sm90", dtype="e3m4")  # e4m3/e5m2 are taken since the fp8 scale rule
    with et.emulate(m, gpu="sm90"):
        with pytest.raises(RuntimeError, match="argument 'model'.*already active"):
            with et.emulate(m, gpu="sm100"):
                pass
    with et.emulate(m, gpu="sm90"):  # the first one exited cleanly: the model can be entered again
        pass
