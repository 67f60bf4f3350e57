"""bf16emu.torch: the autograd ops against the package's independent entry points.

Expected values come from bf16emu.attention / bf16emu.attention_backward (called on the
expanded K/V heads, the group sum done here in NumPy), from the CLI (`bf16emu attention
--out-o/--out-dq/--out-dk/--out-dv`, another process and another I/O path), from bf16emu.gemm
on operands rounded by bf16emu.convert, and from torch.autograd.gradcheck (finite
differences). None is computed by the code under test."""

import os
import subprocess

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import bf16emu  # noqa: E402
import bf16emu.torch as et  # noqa: E402

CLI = os.environ.get("BF16EMU_CLI", "")
POLICIES = ["exact", "fp32", "fa2:sm90", "paper:autocast"]
# (batch, heads, kv_heads, seq, dim); the last two are grouped-query
SHAPES = [(1, 1, 1, 16, 8), (2, 2, 2, 33, 16), (1, 4, 2, 48, 8), (1, 3, 1, 64, 32)]


def bf16_values(shape, gen, scale=1.0):
    """Random BF16-representable values (float64), with repeated rows so that rows tie."""
    x = torch.randn(*shape, generator=gen, dtype=torch.float64) * scale
    x[..., ::5, :] = x[..., :1, :]  # every 5th key/query equals the first: repeated maxima
    return x.to(torch.bfloat16).to(torch.float64)


def inputs(shape, seed):
    b, h, hkv, n, d = shape
    gen = torch.Generator().manual_seed(seed)
    q = bf16_values((b, h, n, d), gen, 2.0)
    k = bf16_values((b, hkv, n, d), gen, 2.0)
    v = bf16_values((b, hkv, n, d), gen)
    do = bf16_values((b, h, n, d), gen)
    return q, k, v, do


def expand(t, heads):
    return np.repeat(t, heads // t.shape[1], axis=1)


def group_sum(g, kv_heads):
    b, h, n, d = g.shape
    return g.reshape(b, kv_heads, h // kv_heads, n, d).sum(axis=2)


def bits_equal(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    assert a.shape == b.shape
    return np.array_equal(a.view(np.uint64), b.view(np.uint64))


def backward_kind(policy):
    return "reference" if policy == "paper:autocast" else "tiled"


@pytest.mark.parametrize("policy", POLICIES)
def test_forward_and_backward_match_the_entry_points(policy):
    outputs = grads = 0
    for si, shape in enumerate(SHAPES):
        for causal in (False, True):
            q, k, v, do = inputs(shape, 10 * si + causal)
            h = shape[1]
            qt, kt, vt = (t.clone().requires_grad_(True) for t in (q, k, v))
            bwd = backward_kind(policy)
            o = et.attention(qt, kt, vt, policy=policy, causal=causal, backward=bwd)
            kx, vx = expand(k.numpy(), h), expand(v.numpy(), h)
            ref = bf16emu.attention(q.numpy(), kx, vx, policy=policy, causal=causal, ledger=False,
                                    reference=False)
            assert o.dtype == torch.float64 and bits_equal(o.detach().numpy(), ref["o"]), (policy, shape, causal)
            outputs += o.numel()
            o.backward(do)
            rb = bf16emu.attention_backward(q.numpy(), kx, vx, do.numpy(), backward=bwd, policy=policy,
                                            causal=causal, ledger=False, reference=False)
            assert bits_equal(rb["o"], ref["o"])
            assert bits_equal(qt.grad.numpy(), rb["dq"]), (policy, shape, causal)
            assert bits_equal(kt.grad.numpy(), group_sum(rb["dk"], shape[2])), (policy, shape, causal)
            assert bits_equal(vt.grad.numpy(), group_sum(rb["dv"], shape[2])), (policy, shape, causal)
            grads += qt.grad.numel() + kt.grad.numel() + vt.grad.numel()
    # 4 shapes x 2 masks: 2 x (128 + 2112 + 1536 + 6144) outputs; dq + dk + dv:
    # 2 x (3 x 128 + 3 x 2112 + (1536 + 2 x 768) + (6144 + 2 x 2048)) gradient elements
    assert outputs == 19840 and grads == 40064


@pytest.mark.parametrize("sites,variant", [({"row_sum": "fp32"}, "fa2"), ({"pv_to_bf16": "fp32", "o_update": "fp32"},
                                                                           "fa2"), (None, "stabilized")])
def test_sites_and_stabilized_match_the_entry_point(sites, variant):
    count = 0
    for si, shape in enumerate(SHAPES[:3]):
        q, k, v, do = inputs(shape, 100 + si)
        qt = q.clone().requires_grad_(True)
        o = et.attention(qt, k, v, policy="paper:autocast", variant=variant, causal=True, sites=sites,
                         backward="reference")
        o.backward(do)
        h = shape[1]
        r = bf16emu.attention_backward(q.numpy(), expand(k.numpy(), h), expand(v.numpy(), h), do.numpy(),
                                       policy="paper:autocast", variant=variant, causal=True, sites=sites,
                                       ledger=False, reference=False)
        assert bits_equal(o.detach().numpy(), r["o"]) and bits_equal(qt.grad.numpy(), r["dq"])
        count += o.numel()
    assert count == 128 + 2112 + 1536


def test_sites_change_the_result():
    # the override reaches the core: row_sum -> fp32 changes O under paper:autocast on tied rows
    q, k, v, _ = inputs((1, 2, 2, 64, 16), 7)
    a = et.attention(q, k, v, policy="paper:autocast", causal=True)
    b = et.attention(q, k, v, policy="paper:autocast", causal=True, sites={"row_sum": "fp32"})
    assert not torch.equal(a, b)


def test_ledger_on_request():
    q, k, v, do = inputs((1, 2, 2, 32, 8), 3)
    qt = q.clone().requires_grad_(True)
    o, led = et.attention(qt, k, v, policy="paper:autocast", ledger=True, backward="reference")
    ref = bf16emu.attention(q.numpy(), k.numpy(), v.numpy(), policy="paper:autocast", reference=False)
    assert led["p_equals_one"] == ref["ledger"]["p_equals_one"] and led["p_equals_one"]["ones"] > 0
    assert "backward" not in led
    o.backward(do)
    assert led["backward"]["sites"]["delta"]["count"] > 0


@pytest.mark.skipif(not CLI or not os.path.exists(CLI), reason="the bf16emu CLI was not built")
@pytest.mark.parametrize("policy", POLICIES)
def test_forward_and_backward_match_the_cli(policy, tmp_path):
    count = 0
    for si, shape in enumerate(SHAPES):
        b, h, hkv, n, d = shape
        causal = si % 2 == 1
        q, k, v, do = inputs(shape, 50 + si)
        files = {}
        for name, t in (("q", q), ("k", expand(k.numpy(), h)), ("v", expand(v.numpy(), h)), ("do", do)):
            files[name] = str(tmp_path / f"{name}.npy")
            np.save(files[name], np.asarray(t, np.float64))
        outs = {name: str(tmp_path / f"out_{name}.npy") for name in ("o", "dq", "dk", "dv")}
        bwd = backward_kind(policy)
        subprocess.run([CLI, "attention", "--q", files["q"], "--k", files["k"], "--v", files["v"], "--do",
                        files["do"], "--backward", "--bwd", bwd, "--policy", policy, "--no-ledger",
                        *(["--causal"] if causal else []), *sum((["--out-" + x, p] for x, p in outs.items()), [])],
                       check=True, capture_output=True)
        qt, kt, vt = (t.clone().requires_grad_(True) for t in (q, k, v))
        o = et.attention(qt, kt, vt, policy=policy, causal=causal, backward=bwd)
        o.backward(do)
        # the CLI writes float32; every value is FP32 or BF16 except under exact (binary64)
        want = {x: np.load(p) for x, p in outs.items()}
        got = {"o": o.detach().numpy(), "dq": qt.grad.numpy()}
        for x in ("o", "dq"):
            assert np.array_equal(got[x].astype(np.float32).view(np.uint32), want[x].view(np.uint32)), (x, shape)
            if policy != "exact":
                assert np.array_equal(got[x], want[x].astype(np.float64)), (x, shape)
        if hkv == h:  # the CLI has no grouped K/V: dK, dV are the per-head ones
            assert np.array_equal(kt.grad.numpy().astype(np.float32), want["dk"])
            assert np.array_equal(vt.grad.numpy().astype(np.float32), want["dv"])
            count += 2 * kt.grad.numel()
        count += o.numel() + qt.grad.numel()
    assert count == 2 * (128 + 2112 + 1536 + 6144) + 2 * (128 + 2112)


def test_gradcheck_exact():
    gen = torch.Generator().manual_seed(5)
    for causal, hkv, bwd in ((False, 2, "reference"), (True, 1, "tiled"), (True, 2, "reference")):
        q = torch.randn(1, 2, 6, 4, generator=gen, dtype=torch.float64, requires_grad=True)
        k = torch.randn(1, hkv, 6, 4, generator=gen, dtype=torch.float64, requires_grad=True)
        v = torch.randn(1, hkv, 6, 4, generator=gen, dtype=torch.float64, requires_grad=True)
        fn = lambda q, k, v: et.attention(q, k, v, policy="exact", causal=causal, backward=bwd)  # noqa: E731
        assert torch.autograd.gradcheck(fn, (q, k, v), eps=1e-6, atol=1e-7, rtol=1e-5)


def test_gradcheck_catches_a_wrong_gradient():
    # the check above can fail: a gradient scaled by 1 + 1e-3 is refused
    class Wrong(torch.autograd.Function):
        @staticmethod
        def forward(ctx, q, k, v):
            ctx.save_for_backward(q, k, v)
            return et.attention(q, k, v, policy="exact", backward="reference")

        @staticmethod
        def backward(ctx, g):
            with torch.enable_grad():
                args = tuple(t.detach().requires_grad_(True) for t in ctx.saved_tensors)
                out = et.attention(*args, policy="exact", backward="reference")
                grads = torch.autograd.grad(out, args, g)
            return grads[0] * (1 + 1e-3), grads[1], grads[2]

    gen = torch.Generator().manual_seed(6)
    args = tuple(torch.randn(1, 1, 5, 3, generator=gen, dtype=torch.float64, requires_grad=True) for _ in range(3))
    assert not torch.autograd.gradcheck(Wrong.apply, args, eps=1e-6, atol=1e-7, rtol=1e-5, raise_exception=False)


def test_threads_do_not_change_the_bits():
    q, k, v, do = inputs((2, 4, 2, 40, 16), 21)
    got = []
    for threads in (1, 2, 3):
        qt = q.clone().requires_grad_(True)
        o = et.attention(qt, k, v, policy="paper:autocast", causal=True, threads=threads)
        o.backward(do)
        x = q[0, 0].clone().requires_grad_(True)
        y = et.linear(x, k[0, 0], threads=threads)
        y.backward(torch.ones_like(y))
        got.append((o.detach(), qt.grad, y.detach(), x.grad))
    assert all(torch.equal(a, b) for other in got[1:] for a, b in zip(got[0], other))


# --- linear and matmul ---------------------------------------------------------------------

def rounded(x, fmt="bf16"):
    bits = bf16emu.convert(np.ascontiguousarray(x, np.float32), to=fmt)
    return bits


def gemm(a, b, c=None, arch="sm90"):
    return bf16emu.gemm(np.ascontiguousarray(a), np.ascontiguousarray(b), c, arch=arch, a_format="bf16")


def test_linear_matches_gemm():
    m, k, n = 320, 352, 320  # Y and dX: 102,400 and 112,640 outputs; dW: 112,640
    gen = torch.Generator().manual_seed(11)
    x = torch.randn(2, m // 2, k, generator=gen, requires_grad=True)
    w = (torch.randn(n, k, generator=gen) / 16).requires_grad_(True)
    bias = torch.randn(n, generator=gen, requires_grad=True)
    dy = torch.randn(2, m // 2, n, generator=gen)
    y = et.linear(x, w, bias, arch="sm90")
    y.backward(dy)
    xq, wq, dyq = rounded(x.detach().reshape(m, k)), rounded(w.detach()), rounded(dy.reshape(m, n))
    want_y = gemm(xq, wq.T, np.broadcast_to(bias.detach().numpy(), (m, n)).copy())
    assert y.shape == (2, m // 2, n) and np.array_equal(y.detach().reshape(m, n).numpy(), want_y)
    assert np.array_equal(x.grad.reshape(m, k).numpy(), gemm(dyq, wq))
    assert np.array_equal(w.grad.numpy(), gemm(dyq.T, xq))
    ones = rounded(np.ones((1, m)))
    assert np.array_equal(bias.grad.numpy(), gemm(ones, dyq).reshape(-1))
    assert y.numel() >= 10 ** 5 and x.grad.numel() >= 10 ** 5 and w.grad.numel() >= 10 ** 5
    # and it is a linear layer: within BF16 input rounding of torch's float32 result
    ref = torch.nn.functional.linear(x.detach(), w.detach(), bias.detach())
    assert (y.detach() - ref).abs().max() < 0.1 and not torch.equal(y.detach(), ref)


def test_matmul_matches_gemm():
    m, k, n = 336, 320, 320  # D 107,520, dA 107,520, dB 102,400 outputs
    gen = torch.Generator().manual_seed(12)
    a = torch.randn(m, k, generator=gen, requires_grad=True)
    b = torch.randn(k, n, generator=gen, requires_grad=True)
    dd = torch.randn(m, n, generator=gen)
    d = et.matmul(a, b, arch="sm80")
    d.backward(dd)
    aq, bq, dq = rounded(a.detach()), rounded(b.detach()), rounded(dd)
    assert np.array_equal(d.detach().numpy(), gemm(aq, bq, arch="sm80"))
    assert np.array_equal(a.grad.numpy(), gemm(dq, bq.T, arch="sm80"))
    assert np.array_equal(b.grad.numpy(), gemm(aq.T, dq, arch="sm80"))
    assert min(d.numel(), a.grad.numel(), b.grad.numel()) >= 10 ** 5


def test_matmul_batched_and_stochastic():
    gen = torch.Generator().manual_seed(13)
    a = torch.randn(3, 8, 16, generator=gen)
    b = torch.randn(3, 16, 8, generator=gen)
    d = et.matmul(a, b, format="fp16")
    for i in range(3):
        aq = bf16emu.convert(a[i].numpy(), to="fp16")
        bq = bf16emu.convert(b[i].numpy(), to="fp16")
        assert np.array_equal(d[i].numpy(), bf16emu.gemm(aq, bq, arch="sm90"))
    s1 = et.matmul(a[0], b[0], rounding="stochastic", seed=4)
    s2 = et.matmul(a[0], b[0], rounding="stochastic", seed=4)
    aq = bf16emu.convert(a[0].numpy(), to="bf16", rounding="stochastic", seed=4)
    bq = bf16emu.convert(b[0].numpy(), to="bf16", rounding="stochastic", seed=5)
    assert torch.equal(s1, s2) and np.array_equal(s1.numpy(), gemm(aq, bq))
    # stochastic rounding of the output too: D rounded to BF16 with stream seed + 3
    s3 = et.matmul(a[0], b[0], rounding="stochastic", seed=4, output="bf16")
    d_bits = bf16emu.convert(gemm(aq, bq), to="bf16", rounding="stochastic", seed=7)
    want = bf16emu.convert(d_bits, to="fp32", format="bf16")
    assert np.array_equal(s3.numpy(), want) and not torch.equal(s3, s1)


# --- emulate -------------------------------------------------------------------------------

class Tiny(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = torch.nn.Linear(16, 48)
        self.out = torch.nn.Linear(16, 16, bias=False)

    def forward(self, x):
        q, k, v = self.qkv(x).view(x.shape[0], x.shape[1], 3, 2, 8).permute(2, 0, 3, 1, 4)
        o = et.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.out(o.transpose(1, 2).reshape(x.shape))


def test_emulate_serves_and_restores():
    torch.manual_seed(0)
    model = Tiny()
    x = torch.randn(2, 12, 16)
    before = model(x)
    state = {k: v.clone() for k, v in model.state_dict().items()}
    with et.emulate(model, attention={"policy": "fa2:sm90"}, linear="sm90") as m:
        assert m is model
        got = m(x)
    # by hand, through the ops themselves
    h = et.linear(x, model.qkv.weight, model.qkv.bias)
    q, k, v = h.view(2, 12, 3, 2, 8).permute(2, 0, 3, 1, 4)
    o = et.attention(q, k, v, policy="fa2:sm90", causal=True)
    want = et.linear(o.transpose(1, 2).reshape(x.shape), model.out.weight)
    assert torch.equal(got, want) and not torch.equal(got, before)
    assert torch.equal(model(x), before)  # restored
    assert all(torch.equal(v, state[k]) for k, v in model.state_dict().items())
    assert all("forward" not in mod.__dict__ for mod in model.modules())
    em = et.emulate(model, attention="paper:autocast", ledger=True)
    em(x).sum().backward()
    assert len(em.ledgers) == 1 and "backward" in em.ledgers[0]
    em.restore()
    assert torch.equal(model(x), before)


# --- bad input -----------------------------------------------------------------------------

def test_bad_input_names_the_argument():
    z = torch.zeros(1, 2, 4, 8)
    cases = [
        (TypeError, "'q'", lambda: et.attention(z.numpy(), z, z, policy="fp32")),
        (TypeError, "'k'", lambda: et.attention(z, z.int(), z, policy="fp32")),
        (ValueError, "'q'", lambda: et.attention(z[0], z, z, policy="fp32")),
        (ValueError, "'q'", lambda: et.attention(torch.zeros(1, 2, 4, 8, device="meta"), z, z, policy="fp32")),
        (ValueError, "'k'", lambda: et.attention(torch.zeros(1, 3, 4, 8), z, z, policy="fp32")),
        (ValueError, "'v'", lambda: et.attention(z, z, z[:, :1], policy="fp32")),
        (ValueError, "'policy'", lambda: et.attention(z, z, z, policy="fp31")),
        (TypeError, "'policy'", lambda: et.attention(z, z, z, policy=3)),
        (ValueError, "'sites'", lambda: et.attention(z, z, z, policy="fp32", sites={"row_summ": "fp32"})),
        (ValueError, "'sites'", lambda: et.attention(z, z, z, policy="fp32", sites={"row_sum": "fp16"})),
        (ValueError, "'backward'", lambda: et.attention(z, z, z, policy="paper:autocast", backward="tiled")),
        (ValueError, "'backward'", lambda: et.attention(z, z, z, policy="fp32", sites="pv=fp32", backward="tiled")),
        (ValueError, "'backward'", lambda: et.attention(z, z, z, policy="fp32", backward="fast")),
        (ValueError, "'variant'", lambda: et.attention(z, z, z, policy="fp32", variant="flash")),
        (ValueError, "'scale'", lambda: et.attention(z, z, z, policy="fp32", scale=-1.0)),
        (ValueError, "'weight'", lambda: et.linear(z, z)),
        (ValueError, "'x'", lambda: et.linear(z, torch.zeros(4, 9))),
        (TypeError, "'x'", lambda: et.linear(z.long(), torch.zeros(4, 8))),
        (ValueError, "'format'", lambda: et.linear(z, torch.zeros(4, 8), format="fp64")),
        (ValueError, "'arch'", lambda: et.linear(z, torch.zeros(4, 8), arch="sm99")),
        (ValueError, "'rounding'", lambda: et.matmul(z[0, 0], torch.zeros(8, 2), rounding="nearest")),
        (ValueError, "'seed'", lambda: et.matmul(z[0, 0], torch.zeros(8, 2), rounding="stochastic")),
        (ValueError, "'b'", lambda: et.matmul(z[0, 0], torch.zeros(7, 2))),
        (ValueError, "'output'", lambda: et.matmul(z[0, 0], torch.zeros(8, 2), output="e4m3")),
        (TypeError, "'model'", lambda: et.emulate(object(), attention="fp32")),
        (ValueError, "'policy'", lambda: et.emulate(Tiny(), attention="fp31")),
    ]
    for err, name, fn in cases:
        with pytest.raises(err, match=name):
            fn()


# --- issue 46: edge cases where torch has an answer, and the emulation's scope ----------------

def _grads(fn, *shapes, bias=None):
    ts = [torch.randn(*s, requires_grad=True) for s in shapes]
    extra = [] if bias is None else [torch.randn(bias, requires_grad=True)]
    y = fn(*ts, *extra)
    y.sum().backward()
    return y, [t.grad for t in ts + extra], ts + extra


@pytest.mark.parametrize("case", ["linear 0 features", "linear 0 features no bias", "linear batch 0",
                                  "matmul K 0", "matmul batch 0", "matmul batched K 0"])
def test_empty_products_give_torch_answer_and_gradients(case):
    torch.manual_seed(1)
    shapes, bias, emu, ref = {
        "linear 0 features": (((3, 0), (4, 0)), 4, et.linear, torch.nn.functional.linear),
        "linear 0 features no bias": (((3, 0), (4, 0)), None, et.linear, torch.nn.functional.linear),
        "linear batch 0": (((0, 4), (3, 4)), 3, et.linear, torch.nn.functional.linear),
        "matmul K 0": (((2, 0), (0, 3)), None, et.matmul, torch.matmul),
        "matmul batch 0": (((0, 2, 4), (0, 4, 3)), None, et.matmul, torch.matmul),
        "matmul batched K 0": (((2, 2, 0), (2, 0, 3)), None, et.matmul, torch.matmul),
    }[case]
    y, g, ts = _grads(emu, *shapes, bias=bias)
    want = ref(*[t.detach() for t in ts])
    assert y.shape == want.shape and torch.equal(y, want)  # zeros, the bias, or empty: exact
    for t, gt in zip(ts, g):
        assert gt is not None and gt.shape == t.shape
    if bias is not None:  # dbias = the column sums of dY = ones: the number of rows, exactly
        assert torch.equal(g[-1], torch.full((bias,), float(shapes[0][0])))
    for gt in g[:2]:
        assert torch.equal(gt, torch.zeros_like(gt))  # K = 0 or a batch of 0: no product reaches them


def test_every_random_stream_is_checked_before_the_forward():
    x, w = torch.randn(2, 16, requires_grad=True), torch.randn(3, 16, requires_grad=True)
    # linear draws streams seed .. seed + 6: 2^64 - 2 passed the forward and failed in backward().
    with pytest.raises(ValueError, match="argument 'seed' = 18446744073709551614"):
        et.linear(x, w, torch.zeros(3), rounding="stochastic", seed=2**64 - 2)
    with pytest.raises(ValueError, match="argument 'seed' = 18446744073709551615"):
        et.linear(x, w, rounding="stochastic", seed=2**64 - 1)
    with pytest.raises(ValueError, match="argument 'seed'"):
        et.matmul(x, w.t(), rounding="stochastic", seed=2**64 - 5)
    with pytest.raises(TypeError, match="argument 'seed'"):
        et.linear(x, w, rounding="stochastic", seed=True)
    y = et.linear(x, w, torch.zeros(3, requires_grad=True), rounding="stochastic", seed=2**64 - 7)
    y.sum().backward()  # the largest seed whose streams all exist: forward and backward run
    et.matmul(x, w.t(), rounding="stochastic", seed=2**64 - 6).sum().backward()


def test_names_are_normalised_in_the_torch_layer():
    x, w = torch.randn(2, 16), torch.randn(3, 16)
    want = et.linear(x, w, arch="sm90", format="bf16")
    assert torch.equal(et.linear(x, w, arch=" SM90", format="BF16", rounding="RNE"), want)
    assert torch.equal(et.linear(x, w, format="bfloat16"), want)
    q = torch.randn(1, 2, 8, 4)
    assert torch.equal(et.attention(q, q, q, policy="FA2:SM90", backward="TILED"),
                       et.attention(q, q, q, policy="fa2:sm90", backward="tiled"))


def test_emulate_handles_refuse_reentry():
    model = Tiny()
    em = et.emulate(model, linear="sm90")
    with em:
        with pytest.raises(RuntimeError, match="already entered"):
            with em:
                pass
    with pytest.raises(RuntimeError, match="already entered or restored"):
        with em:
            pass
    assert all("forward" not in mod.__dict__ for mod in model.modules())


@pytest.mark.parametrize("key,val", [("causal", True), ("scale", 0.5), ("ledger", True)])
def test_emulate_refuses_keys_each_call_sets(key, val):
    with pytest.raises(ValueError, match=f"argument 'attention': key '{key}'"):
        et.emulate(Tiny(), attention={"policy": "fp32", key: val})


def test_emulation_applies_to_its_model_only():
    torch.manual_seed(2)
    mine, other = Tiny(), Tiny()
    x = torch.randn(2, 12, 16)
    plain = other(x)
    q = torch.randn(1, 2, 8, 4)
    outside = et.scaled_dot_product_attention(q, q, q)
    with et.emulate(mine, attention="paper:autocast") as m:
        emulated = m(x)
        assert torch.equal(other(x), plain)  # another model's attention is torch's
        assert torch.equal(et.scaled_dot_product_attention(q, q, q), outside)
    assert not torch.equal(emulated, mine(x))
    assert "forward" not in mine.__dict__


def test_sdpa_shapes_name_the_argument():
    q = torch.randn(1, 2, 4, 8)
    with pytest.raises(ValueError, match="argument 'key': 3 heads"):
        et.scaled_dot_product_attention(q, torch.randn(1, 3, 4, 8), torch.randn(1, 3, 4, 8))
    with pytest.raises(ValueError, match="argument 'value'"):
        et.scaled_dot_product_attention(q, q, torch.randn(1, 2, 5, 8))
    with pytest.raises(ValueError, match="argument 'key': dim"):
        et.scaled_dot_product_attention(q, torch.randn(1, 2, 4, 7), q)
    with pytest.raises(TypeError, match="argument 'query'"):
        et.scaled_dot_product_attention(q.numpy(), q, q)
    q2 = torch.randn(4, 8)  # 2-d: torch's answer outside an emulation
    want = torch.softmax(q2 @ q2.t() / 8 ** 0.5, dim=-1) @ q2
    assert torch.allclose(et.scaled_dot_product_attention(q2, q2, q2), want)

    class TwoD(torch.nn.Module):
        def forward(self, t):
            return et.scaled_dot_product_attention(t, t, t)

    with et.emulate(TwoD(), attention="fp32") as m:
        with pytest.raises(ValueError, match="argument 'query' must be 4-d"):
            m(q2)
