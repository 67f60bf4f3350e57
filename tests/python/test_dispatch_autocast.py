"""bf16emu.torch.emulate_products with autocast, the run's report and per-module overrides
(issue 43 items 1-3). Expectations come from direct bf16emu.gemm / bf16emu.convert calls, torch's
own .to(torch.bfloat16) (round to nearest even) and plain FP32 torch, never from the mode."""
import json
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402

import bf16emu  # noqa: E402
import bf16emu.torch as et  # noqa: E402

from dispatch_reference import PRESETS, gemm2, same_bits  # noqa: E402
bf = lambda t: t.detach().to(torch.bfloat16)  # noqa: E731  what autocast's casts do


def r(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


class Net(torch.nn.Module):
    """Linear -> gelu -> Linear -> softmax -> loss."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(1)
        self.l1, self.l2 = torch.nn.Linear(24, 40), torch.nn.Linear(40, 7)

    def forward(self, x, target):
        p = torch.softmax(self.l2(F.gelu(self.l1(x))), -1)
        return F.mse_loss(p, target)


def by_hand(m, x, target, gpu, dtype="bf16"):
    """What a CUDA autocast step computes, each product a direct bf16emu.gemm. Returns the
    loss and the gradients of l1.weight, l1.bias, l2.weight, l2.bias."""
    low = {"bf16": torch.bfloat16, "fp16": torch.float16}[dtype]
    lo = lambda t: t.detach().to(low)  # noqa: E731  autocast's cast, round to nearest even
    W1, b1, W2, b2 = (p.detach() for p in (m.l1.weight, m.l1.bias, m.l2.weight, m.l2.bias))
    # Forward: autocast casts x, W and b to the low dtype; addmm = FP32 product + bias, rounded once.
    z1 = lo(gemm2(x, W1.t(), gpu, dtype) + lo(b1).float())
    h = lo(F.gelu(z1.float()))  # element-wise: FP32 arithmetic, rounded once
    z2 = lo(gemm2(h, W2.t(), gpu, dtype) + lo(b2).float())
    z2f = z2.float().requires_grad_()  # softmax and the loss: autocast's fp32 list
    loss = F.mse_loss(torch.softmax(z2f, -1), target)
    (g_z2,) = torch.autograd.grad(loss, z2f)
    # Backward: the gradient reaching the low-precision tensor z2 is cast to its dtype; autocast
    # is off there.
    g_z2 = lo(g_z2)
    gW2 = lo(gemm2(g_z2.t(), h, gpu, dtype)).float()  # low-precision product, then cast to W2's FP32
    gb2 = lo(g_z2.float().sum(0)).float()  # low-precision reduction: FP32 sum, rounded once
    g_h = lo(gemm2(g_z2, W2, gpu, dtype))
    g_z1 = lo(torch.ops.aten.gelu_backward(g_h.float(), z1.float()))
    gW1 = lo(gemm2(g_z1.t(), x, gpu, dtype)).float()
    gb1 = lo(g_z1.float().sum(0)).float()
    return loss.detach(), gW1, gb1, gW2, gb2


@pytest.mark.parametrize("gpu,dtype", [(g, "bf16") for g in PRESETS] + [("sm90", "fp16")])
def test_autocast_model_forward_and_gradients(gpu, dtype):
    m, x = Net(), r(6, 24, seed=2)
    target = torch.softmax(r(6, 7, seed=3), -1)
    with et.emulate_products(gpu=gpu, dtype=dtype, model=m) as e:  # autocast: default for bf16/fp16
        loss = m(x, target)
        loss.backward()
    want = by_hand(m, x, target, gpu, dtype)
    same_bits(loss.detach(), want[0])
    for p, g in zip((m.l1.weight, m.l1.bias, m.l2.weight, m.l2.bias), want[1:]):
        same_bits(p.grad, g)
    rep = e.report_dict()
    assert rep["autocast"] is True and rep["not_emulated"] == {}
    assert {k: v["calls"] for k, v in rep["emulated"].items()} == {"addmm": 2, "mm": 3}
    assert {"_softmax", "mse_loss", "_softmax_backward_data", "mse_loss_backward"} <= set(rep["fp32"])
    assert {"gelu", "gelu_backward", "sum"} <= set(rep["rounded"])
    # The model is not the same as without autocast: the rounding points matter.
    m2 = Net()
    with et.emulate_products(gpu=gpu, dtype=dtype, model=m2, autocast=False):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            loss2 = m2(x, target)
    assert not torch.equal(loss2, loss.detach())


def test_emulate_front_and_dtype_of_outputs():
    m, x = Net(), r(6, 24, seed=4)
    with et.emulate(m, gpu="sm90", dtype="bf16") as model:
        h = model.l1(x)
        y = model.l2(F.gelu(h))
    assert h.dtype == y.dtype == torch.bfloat16
    same_bits(h, bf(gemm2(x, m.l1.weight.t(), "sm90") + bf(m.l1.bias).float()))
    with et.emulate(m, gpu="sm90", dtype="fp16") as model:
        assert model.l1(x).dtype == torch.float16


def test_tf32_autocast_refused_and_autocast_checked():
    with pytest.raises(ValueError, match="argument 'autocast'"):
        et.emulate_products(gpu="sm90", dtype="tf32", autocast=True)
    with pytest.raises(TypeError, match="argument 'autocast'"):
        et.emulate_products(gpu="sm90", autocast="yes")
    with pytest.raises(ValueError, match="argument 'autocast'"):
        et.emulate(Net(), gpu="sm90", dtype="tf32", autocast=True)
    with pytest.raises(ValueError, match="argument 'autocast'/'overrides'"):
        et.emulate(Net(), autocast=True)  # no gpu=: no products' mode to set
    with et.emulate_products(gpu="sm90", dtype="tf32") as e:  # None: off for tf32
        y = r(3, 5) @ r(5, 2)
    assert y.dtype == torch.float32 and e.report_dict()["autocast"] is False


def test_op_outside_the_lists_warned_once_and_reported():
    x = r(5, 9, seed=5)
    with pytest.warns(UserWarning, match="aten.topk is not emulated") as rec:
        with et.emulate_products(gpu="sm80") as e:
            y = x @ x.t()  # bf16
            torch.topk(y, 2)
            torch.topk(y, 3)
    assert sum("aten.topk" in str(w.message) for w in rec) == 1
    ne = e.report_dict()["not_emulated"]["topk"]
    assert ne["calls"] == 2 and "low-precision" in ne["reason"]
    assert "aten.topk" in e.report()


def test_report_differences_and_modules():
    a, b = r(9, 70, seed=6), r(70, 11, seed=7)
    with et.emulate_products(gpu="sm90", autocast=False) as e:
        a @ b
    emu, host = gemm2(a, b, "sm90"), a @ b  # host: plain FP32 torch, outside the mode
    nz = host != 0
    want_rel = float(((emu - host).abs()[nz] / host.abs()[nz]).max())
    mm = e.report_dict()["emulated"]["mm"]
    assert mm["outputs"] == 99 and mm["differing"] == int((emu != host).sum()) and mm["differing"] > 0
    assert mm["max_rel_diff"] == pytest.approx(want_rel, rel=1e-6) and mm["max_rel_diff"] > 0
    assert mm["differing_after_rounding"] == mm["differing"]  # FP32 output: no rounding
    with et.emulate_products(gpu="sm90") as e3:  # autocast: bf16 output
        a @ b
    mm = e3.report_dict()["emulated"]["mm"]
    assert mm["differing"] == int((emu.to(torch.bfloat16).float() != host).sum())
    assert mm["differing_after_rounding"] == int((emu.to(torch.bfloat16) != host.to(torch.bfloat16)).sum())
    assert mm["differing_after_rounding"] < mm["differing"]
    m, x = Net(), r(4, 24, seed=8)
    with et.emulate_products(gpu="sm90", model=m) as e2:
        m(x, torch.zeros(4, 7)).backward()
    d = e2.report_dict()
    assert d["modules"]["l1"]["addmm"]["calls"] == 1 and d["modules"]["l2"]["addmm"]["calls"] == 1
    assert d["modules"]["(backward)"]["mm"]["calls"] == 3 and "_softmax" in d["modules"]["(root)"]
    json.loads(json.dumps(d))
    text = e2.report()
    assert "l1:" in text and "l2:" in text and "(backward):" in text


class LM(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(3)
        self.body, self.lm_head = torch.nn.Linear(16, 96), torch.nn.Linear(96, 9)

    def forward(self, x):
        return self.lm_head(self.body(x))


def test_overrides():
    m, x = LM(), r(5, 16, seed=9)
    with et.emulate_products(gpu="sm90", model=m, overrides={"lm_head": None}) as e:
        y = m(x)
    h = bf(gemm2(x, m.body.weight.t(), "sm90") + bf(m.body.bias).float())  # body: sm90, autocast
    same_bits(y, F.linear(h.float(), m.lm_head.weight, m.lm_head.bias))  # lm_head: plain FP32 torch
    assert e.report_dict()["modules"]["lm_head"]["addmm"]["how"] == "host_products"
    with et.emulate_products(gpu="sm90", model=m, overrides={"lm_head": "sm80"}, autocast=False):
        y = m(x)
    h = gemm2(x, m.body.weight.t(), "sm90") + m.body.bias
    same_bits(y, gemm2(h, m.lm_head.weight.t(), "sm80") + m.lm_head.bias)
    assert not torch.equal(gemm2(h, m.lm_head.weight.t(), "sm80"), gemm2(h, m.lm_head.weight.t(), "sm90"))
    with pytest.raises(ValueError, match="argument 'overrides'.*'head'"):
        et.emulate_products(gpu="sm90", model=m, overrides={"head": None})
    with pytest.raises(ValueError, match="argument 'overrides'.*sm1234"):
        et.emulate(m, gpu="sm90", overrides={"lm_head": "sm1234"})
    with pytest.raises(ValueError, match="argument 'overrides'.*model="):
        et.emulate_products(gpu="sm90", overrides={"lm_head": None})


def test_autocast_single_ops():
    """One op of each class on low-precision tensors, against hand-written FP32 + .to(bf16)."""
    a, b, c = r(4, 33, seed=10), r(33, 6, seed=11), r(6, seed=12)
    ab, cb = bf(a @ torch.eye(33)), bf(c)  # bf16 operands made outside the mode
    p = gemm2(a, b, "sm80")
    with et.emulate_products(gpu="sm80") as e:
        y = torch.addmm(c, a, b, beta=0.5, alpha=2.0)
        s = ab[:, :6] + cb  # element-wise: FP32 sum rounded once
        q = ab[:, :6] * c  # bf16 * FP32 tensor: torch promotes to FP32
        ex = torch.exp(ab)  # autocast fp32 list: FP32 output
        sm = torch.softmax(ab, -1)
        g = F.gelu(ab)
        t = ab.clone()
        t.mul_(1.1)  # in place: FP32 arithmetic, rounded into the bf16 tensor
    same_bits(y, bf(2.0 * p + 0.5 * bf(c).float()))
    same_bits(s, bf(ab[:, :6].float() + cb.float()))
    same_bits(q, ab[:, :6].float() * c)
    same_bits(ex, torch.exp(ab.float()))
    same_bits(sm, torch.softmax(ab.float(), -1))
    same_bits(g, bf(F.gelu(ab.float())))
    same_bits(t, bf(ab.float() * 1.1))
    d = e.report_dict()
    assert set(d["fp32"]) == {"exp", "_softmax"} and {"add", "mul", "gelu", "mul_"} <= set(d["rounded"])


class _Gpt(torch.nn.Module):
    """A nanoGPT-style model as research code writes it: attention by hand (q @ k^T, softmax, @ v)."""

    def __init__(self, vocab=17, d=16, heads=2, n=8):
        super().__init__()
        self.heads = heads
        self.tok, self.pos = torch.nn.Embedding(vocab, d), torch.nn.Embedding(n, d)
        self.ln1, self.ln2, self.lnf = torch.nn.LayerNorm(d), torch.nn.LayerNorm(d), torch.nn.LayerNorm(d)
        self.qkv, self.proj = torch.nn.Linear(d, 3 * d), torch.nn.Linear(d, d)
        self.fc, self.out = torch.nn.Linear(d, 4 * d), torch.nn.Linear(4 * d, d)
        self.lm_head = torch.nn.Linear(d, vocab, bias=False)
        self.register_buffer("mask", torch.tril(torch.ones(n, n, dtype=torch.bool)))

    def forward(self, idx, targets):
        B, T = idx.shape
        x = self.tok(idx) + self.pos(torch.arange(T))
        q, k, v = self.qkv(self.ln1(x)).split(x.shape[-1], dim=2)
        q, k, v = (t.reshape(B, T, self.heads, -1).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / q.shape[-1] ** 0.5)
        att = att.masked_fill(~self.mask[:T, :T], float("-inf")).softmax(-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, -1)
        x = x + self.proj(y)
        x = x + self.out(F.gelu(self.fc(self.ln2(x))))
        logits = self.lm_head(self.lnf(x))
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), targets.reshape(-1))


def test_nanogpt_trains_with_every_product_emulated():
    """Issue 43's 'done when': the model trains under emulate(model, gpu='sm90', dtype='bf16')
    and the report shows every product of the forward and the backward as emulated. The count of
    products comes from a counting mode written here, on the same step in plain PyTorch."""
    from torch.utils._python_dispatch import TorchDispatchMode

    products = {"mm", "bmm", "addmm", "baddbmm"}

    class Count(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.n = {}

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            name = func.overloadpacket.__name__
            if name in products:
                self.n[name] = self.n.get(name, 0) + 1
            return func(*args, **(kwargs or {}))

    g = torch.Generator().manual_seed(3)
    idx, tgt = torch.randint(0, 17, (2, 8), generator=g), torch.randint(0, 17, (2, 8), generator=g)
    torch.manual_seed(0)
    model = _Gpt()
    with Count() as c:
        model(idx, tgt).backward()
    model.zero_grad()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    losses = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        em = et.emulate(model, gpu="sm90", dtype="bf16")
        with em as m:
            for _ in range(3):
                opt.zero_grad()
                loss = m(idx, tgt)
                loss.backward()
                opt.step()
                losses.append(float(loss))
    rep = em.report_dict()
    assert all(np.isfinite(losses)) and losses[-1] < losses[0], losses
    assert not products & set(rep["not_emulated"]), rep["not_emulated"]
    assert {k: v["calls"] for k, v in rep["emulated"].items() if k in products} == {k: 3 * n for k, n in c.n.items()}
    assert "(backward)" in rep["modules"] and "qkv" in rep["modules"] and "lm_head" in rep["modules"]
    assert all(p.grad is not None and p.grad.dtype == torch.float32 for p in model.parameters())


def test_compare_off_same_bits_no_differences():
    """compare=False skips the host's FP32 product: the same outputs bit for bit, the report
    without the difference counters; a non-bool compare is refused, naming it."""
    a, b = torch.randn(5, 37), torch.randn(37, 6)
    x, w = torch.randn(2, 3, 8, 8), torch.randn(4, 3, 3, 3)
    outs = {}
    for compare in (True, False):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with et.emulate_products(gpu="sm90", dtype="bf16", compare=compare) as e:
                outs[compare] = (a @ b, F.conv2d(x, w))
        rep = e.report_dict()["emulated"]
        assert ("differing" in rep["mm"]) == compare and ("differing" in rep["convolution"]) == compare
        assert rep["mm"]["calls"] == 1 and rep["convolution"]["calls"] == 1
    for t, f in zip(outs[True], outs[False]):
        same_bits(t, f)
    with pytest.raises(TypeError, match="argument 'compare'"):
        et.emulate_products(gpu="sm90", compare="no")
    with pytest.raises(ValueError, match="only with gpu="):
        et.emulate(torch.nn.Linear(2, 2), compare=False)
