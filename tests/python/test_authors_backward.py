"""The paper authors' backward through the Python faces: bf16emu.attention_backward(...,
backward="authors") against the independent PyTorch twin (tests/python/twin_autocast.py), delta
included (the CLI does not write it); bf16emu.torch.attention and emulate() train with it.
The bitwise comparison on more shapes, through the CLI, is in test_paper_autocast_twin.py.
"""

import os
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="python3-torch is not installed")

import bf16emu  # noqa: E402
import bf16emu.torch as et  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import twin_autocast as twin  # noqa: E402
from test_paper_autocast_twin import sink_inputs, torch_bf16, torch_bits  # noqa: E402


@pytest.mark.parametrize("kind", ["authors", "authors:promote"])
@pytest.mark.parametrize("n,d,tile,causal,stable", [(96, 32, 32, True, False), (80, 16, 32, False, True)])
def test_module_matches_twin_with_delta(n, d, tile, causal, stable, kind):
    q, k, v, do = sink_inputs(21 + n, 2, n, d)
    r = bf16emu.attention_backward(q, k, v, do, policy="paper:autocast", causal=causal, block_m=tile, block_n=tile,
                                   variant="stabilized" if stable else "fa2", backward=kind, ledger=False,
                                   reference=False)
    assert r["backward"] == kind
    o, l, m = twin.forward(torch_bf16(q), torch_bf16(k), torch_bf16(v), causal=causal, stable=stable, tile=tile)
    lse = twin.lse(l, m)
    got = twin.backward(torch_bf16(q), torch_bf16(k), torch_bf16(v), o, lse, torch_bf16(do), causal=causal,
                        autocast=kind == "authors", tile=tile)
    for name, t in zip(("dq", "dk", "dv", "delta"), got):
        want = t.to(torch.float64).numpy()
        bad = int((r[name] != want).sum())
        assert bad == 0, f"{name}: {bad} of {want.size} differ"
    # delta: FP32 under autocast (a sum of BF16 products), BF16 in the eager reading
    delta32 = r["delta"].astype(np.float32)
    assert (delta32 == r["delta"]).all()
    is_bf16 = (delta32.view(np.uint32) & 0xFFFF) == 0
    assert is_bf16.all() == (kind == "authors:promote")


def test_refused_outside_the_paper_policies():
    q = np.zeros((1, 1, 4, 4))
    for pol in ("fa2:sm80", "exact", "fp32"):
        with pytest.raises(ValueError, match="paper:autocast or paper:bf16"):
            bf16emu.attention_backward(q, q, q, q, policy=pol, backward="authors")
    with pytest.raises(ValueError, match="authors:promote"):
        bf16emu.attention_backward(q, q, q, q, policy="paper:autocast", backward="author")
    with pytest.raises(ValueError, match="paper:autocast or paper:bf16"):
        et.attention(torch.zeros(1, 1, 4, 4), torch.zeros(1, 1, 4, 4), torch.zeros(1, 1, 4, 4), policy="fa2:sm90",
                     backward="authors")


def test_torch_attention_gradients_are_the_authors_backward():
    """et.attention(..., backward="authors"): the gradients autograd hands back are the module's
    dq, dk, dv for the same inputs and dO, and differ from the reference backward's."""
    q, k, v, do = (torch.from_numpy(a) for a in sink_inputs(3, 2, 64, 16))
    grads = {}
    for kind in ("authors", "reference"):
        qt, kt, vt = (x.clone().requires_grad_() for x in (q, k, v))
        o = et.attention(qt, kt, vt, policy="paper:autocast", causal=True, backward=kind)
        o.backward(do)
        grads[kind] = (qt.grad, kt.grad, vt.grad)
    r = bf16emu.attention_backward(q.numpy(), k.numpy(), v.numpy(), do.numpy(), policy="paper:autocast", causal=True,
                                   backward="authors", ledger=False, reference=False)
    for g, name in zip(grads["authors"], ("dq", "dk", "dv")):
        assert (g.numpy() == r[name]).all()
    assert any((a != b).any() for a, b in zip(grads["authors"], grads["reference"]))


class _TinyAttention(torch.nn.Module):
    def __init__(self, d_model=32, heads=2):
        super().__init__()
        self.heads = heads
        self.qkv = torch.nn.Linear(d_model, 3 * d_model)
        self.out = torch.nn.Linear(d_model, d_model)

    def forward(self, x):
        b, n, c = x.shape
        q, k, v = (t.view(b, n, self.heads, c // self.heads).transpose(1, 2) for t in self.qkv(x).chunk(3, dim=-1))
        y = et.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.out(y.transpose(1, 2).reshape(b, n, c))


def test_emulate_trains_with_the_authors_backward():
    """emulate(model, attention={"policy": "paper:autocast", "backward": "authors"}): a training
    step runs, the gradients are finite and differ from the reference backward's."""
    torch.manual_seed(0)
    model = _TinyAttention()
    x = torch.randn(2, 24, 32)
    grads = {}
    for kind in ("authors", "reference"):
        model.zero_grad()
        with et.emulate(model, attention={"policy": "paper:autocast", "backward": kind}) as m:
            m(x).square().mean().backward()
        grads[kind] = model.qkv.weight.grad.clone()
        assert torch.isfinite(grads[kind]).all()
    assert not torch.equal(grads["authors"], grads["reference"])
    assert float((grads["authors"] - grads["reference"]).norm() / grads["reference"].norm()) < 0.05
