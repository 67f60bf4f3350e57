"""compare()/explain(), the tensor-core model (mma, gemm) and attention from Python. Expected
values come from the formats' definitions, the documented A100 probe, exact small-integer
arithmetic in NumPy, or an independent float64 softmax."""

import os
import subprocess
import sys

import numpy as np
import pytest

import bf16emu


def test_compare_counts_histogram_worst_first():
    actual = np.array([[0x3F80, 0x3F81, 0x3F80], [0x7FC0, 0x8000, 0x0001]], dtype=np.uint16)
    expected = np.array([[0x3F80, 0x3F80, 0x3F83], [0x3F80, 0x0000, 0x8001]], dtype=np.uint16)
    c = bf16emu.compare(actual, expected, format="bf16")
    assert c.count == 6
    assert c.mismatches == 5  # -0 vs +0 differs in bits, 0 ulps apart
    assert c.ulp_histogram == {0: 2, 1: 1, 2: 1, 4: 1, "nan": 1}  # 3 ulps: bucket (2, 4]
    assert c.first_mismatches == [(0, 1), (0, 2), (1, 0), (1, 1), (1, 2)]
    assert c.worst["index"] == (1, 0) and c.worst["ulps"] is None  # NaN vs a number
    e = c.explain((0, 2))
    assert e["ulps"] == 3 and e["actual"] == 1.0 and e["expected"] == 1.0234375
    assert c.explain(5)["ulps"] == 2  # smallest subnormals of opposite sign
    c2 = bf16emu.compare(actual, expected, format="bf16", first=2)
    assert c2.first_mismatches == [(0, 1), (0, 2)]
    assert bf16emu.compare(expected, expected, format="bf16").mismatches == 0


def test_compare_explain_traces_the_operation():
    torch = pytest.importorskip("torch")
    a = torch.tensor([1.0, 1.0, 3.0], dtype=torch.bfloat16)
    b = torch.tensor([2.0 ** -8, 2.0 ** -7, 2.0 ** -9], dtype=torch.bfloat16)
    mine = bf16emu.add(a, b)
    theirs = torch.tensor([1.0, 1.0078125, 3.0], dtype=torch.bfloat16)  # 3 + 2^-9 rounds to 3
    c = bf16emu.compare(theirs, mine, op="add", inputs=(a, b))
    assert c.mismatches == 0
    t = c.explain(0)["trace"]
    assert t["decision"] == "tie_down" and t["guard"] == 1 and t["sticky"] == 0


def test_compare_bad_input():
    x = np.zeros(3, np.uint16)
    with pytest.raises(ValueError, match="argument 'expected'"):
        bf16emu.compare(x, np.zeros(4, np.uint16), format="bf16")
    with pytest.raises(TypeError, match="argument 'expected'"):
        bf16emu.compare(np.zeros(3, np.float32), np.zeros(3, np.float16))
    with pytest.raises(ValueError, match="argument 'index'"):
        bf16emu.compare(x, x, format="bf16").explain(7)
    with pytest.raises(ValueError, match="argument 'op'"):
        bf16emu.compare(x, x, format="bf16", op="pow", inputs=(x, x))


def test_mma_a100_probe():
    # docs/tensor-cores.md, the A100 F probe: 1*1 + (-0x1.fffffep-1) = 2^-24 with 24-bit alignment.
    a = np.zeros((16, 16), np.uint16)
    b = np.zeros((16, 8), np.uint16)
    c = np.zeros((16, 8), np.float32)
    a[0, 0] = 0x3F80
    b[0, 0] = 0x3F80
    c[0, 0] = np.array([0xBF7FFFFF], np.uint32).view(np.float32)[0]
    d, tr = bf16emu.mma(a, b, c, arch="sm80", a_format="bf16", trace=(0, 0))
    assert d.dtype == np.float32 and d.shape == (16, 8)
    assert int(d[0, 0:1].view(np.uint32)[0]) == 0x33800000
    assert (d.reshape(-1)[1:] == 0).all()
    assert tr["block_size"] == 8 and len(tr["blocks"]) == 2 and tr["blocks"][0]["k0"] == 0


def test_gemm_small_integers_exact():
    rng = np.random.default_rng(3)
    A = rng.integers(-8, 9, size=(5, 40)).astype(np.float32)
    B = rng.integers(-8, 9, size=(40, 7)).astype(np.float32)
    C = rng.integers(-100, 101, size=(5, 7)).astype(np.float32)
    a_bits = bf16emu.convert(A, to="bf16")  # small integers: exact in bf16
    b_bits = bf16emu.convert(B, to="bf16")
    for arch in ("sm80", "sm90", "sm100"):
        D = bf16emu.gemm(a_bits, b_bits, C, arch=arch, a_format="bf16")
        np.testing.assert_array_equal(D, (A.astype(np.float64) @ B + C).astype(np.float32))


def test_gemm_torch_and_bad_input():
    torch = pytest.importorskip("torch")
    A = torch.ones(4, 32, dtype=torch.float16)
    B = torch.ones(32, 3, dtype=torch.float16)
    D = bf16emu.gemm(A, B, arch="sm90")
    assert D.dtype == torch.float32 and torch.equal(D, torch.full((4, 3), 32.0))
    with pytest.raises(ValueError, match="argument 'arch'"):
        bf16emu.gemm(A, B, arch="sm42")
    with pytest.raises(ValueError, match="no preset for sm70 wgmma fp16 -> fp32"):
        bf16emu.gemm(A, B, arch="sm70", c_format="fp32", kind="wgmma")
    with pytest.raises(ValueError, match="argument 'b'"):
        bf16emu.gemm(A, torch.ones(31, 3, dtype=torch.float16), arch="sm90")
    with pytest.raises(ValueError, match="mma on"):
        bf16emu.mma(A, B, arch="sm80")


def _softmax_reference(q, k, v, causal=False):
    s = np.einsum("bhnd,bhmd->bhnm", q, k) / np.sqrt(q.shape[-1])
    if causal:
        n = s.shape[-1]
        s = np.where(np.tril(np.ones((n, n), bool)), s, -np.inf)
    m = s.max(axis=-1, keepdims=True)
    p = np.exp(s - m)
    l = p.sum(axis=-1, keepdims=True)
    return np.einsum("bhnm,bhmd->bhnd", p / l, v), (m + np.log(l))[..., 0]


@pytest.mark.parametrize("causal", [False, True])
def test_attention_exact_and_fa2(causal):
    rng = np.random.default_rng(11)
    q, k, v = (rng.standard_normal((2, 3, 40, 16)) for _ in range(3))
    o_ref, lse_ref = _softmax_reference(q, k, v, causal)
    r = bf16emu.attention(q, k, v, policy="exact", causal=causal)
    assert r["o"].shape == (2, 3, 40, 16) and r["lse"].shape == (2, 3, 40)
    np.testing.assert_allclose(r["o"], o_ref, rtol=0, atol=1e-12)
    np.testing.assert_allclose(r["lse"], lse_ref, rtol=0, atol=1e-12)
    f = bf16emu.attention(q, k, v, policy="fa2:sm90", causal=causal)
    assert f["policy"] == "fa2:sm90" and f["out_frac_bits"] == 7  # O in bf16
    np.testing.assert_allclose(f["o"], o_ref, rtol=0, atol=0.05)
    assert (f["o"] != o_ref).any()
    assert f["ledger"]["sites"]["qk"]["count"] > 0
    assert f["output_error"]["n"] == q.size


def test_attention_backward_and_bad_input():
    rng = np.random.default_rng(12)
    q, k, v, do = (rng.standard_normal((1, 2, 32, 16)).astype(np.float32) for _ in range(4))
    r = bf16emu.attention_backward(q, k, v, do, policy="fa2:sm80", backward="tiled")
    for key in ("dq", "dk", "dv"):
        assert r[key].shape == (1, 2, 32, 16)
        assert r["grad_error"][key]["n"] == q.size
    with pytest.raises(ValueError, match="argument 'policy'"):
        bf16emu.attention(q, k, v, policy="fa3:sm90")
    with pytest.raises(ValueError, match="argument 'variant'"):
        bf16emu.attention(q, k, v, variant="flash")
    with pytest.raises(ValueError, match="argument 'k'"):
        bf16emu.attention(q, k[:, :, :16], v)
    with pytest.raises(ValueError, match="argument 'q'"):
        bf16emu.attention(q[0], k[0], v[0])
    with pytest.raises(ValueError, match="argument 'beta'"):
        bf16emu.attention(q, k, v, variant="stabilized", beta=float("nan"))
    bad = q.copy()
    bad[0, 0, 0, 0] = np.inf
    with pytest.raises(ValueError, match="argument 'q'"):
        bf16emu.attention(bad, k, v)


def test_example_runs():
    pytest.importorskip("torch")
    here = os.path.dirname(os.path.abspath(__file__))
    example = os.path.join(here, "..", "..", "examples", "python", "crosscheck_attention.py")
    out = subprocess.run([sys.executable, example, "--seq", "64", "--dim", "32", "--heads", "2"], check=True,
                         capture_output=True, text=True, env=dict(os.environ)).stdout
    assert "mismatches" in out and "ledger" in out
