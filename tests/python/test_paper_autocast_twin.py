"""`bf16emu attention --policy paper:autocast` against an independent PyTorch twin
(tests/python/twin_autocast.py, docs/pytorch-twin.md).

1. The facts the bitwise claim rests on, checked here on this torch: FP32 add, sub, mul, div
   are correctly rounded (nearest even); FP32 -> BF16 (.to and copy_) rounds once to nearest
   even; BF16 add, sub, mul, div round once from the FP32 result; exp in binary64 rounded to
   FP32 is the correctly rounded FP32 exp for every BF16 argument. Expected values are exact
   rationals (fractions.Fraction) rounded here.
2. "sequential" twin vs the CLI: every element of O equal, bit for bit (N = 600 causal: two
   key tiles, the second fully masked for the first row tile; standard and stabilized; N = 256
   non-causal; several seeds).
3. "native" twin (torch's bf16 matmul, exp and sum) vs the CLI: agreement rate and largest
   distance in BF16 ulps, printed; over 96 independent heads the signed bias of O has the same
   sign and a z over heads within tolerance of the CLI's.

4. The authors' backward (attention.py lines 120-183): the twin's `backward` (both readings
   of the FP32-P x BF16-dO einsum: under autocast, and promoted) against `--bwd authors` and
   `--bwd authors:promote`: every element of dQ, dK, dV equal, bit for bit, on five shapes with
   several query and key tiles, causal and not.

Run with `pytest -s` to see the counts. BF16EMU_TWIN_LONG=1 (the `long` CTest entry) adds a
bigger version of 2 and 3. Run directly (python3 this_file.py), it exits 77 (CTest SKIP) when
torch, NumPy, pytest or the CLI is missing.
"""

import fractions
import importlib.util
import json
import os
import subprocess
import sys

if __name__ == "__main__":
    for mod in ("pytest", "numpy", "torch"):
        if importlib.util.find_spec(mod) is None:
            print(f"SKIPPED: {sys.executable} has no {mod} (apt-get install python3-{mod})")
            sys.exit(77)
    if not os.path.exists(os.environ.get("BF16EMU_CLI", "")):
        print("SKIPPED: the bf16emu CLI was not built (BF16EMU_CLI unset)")
        sys.exit(77)
    import pytest
    sys.exit(pytest.main(["-q", "-s", "-p", "no:cacheprovider", __file__]))

import numpy as np  # noqa: E402
import pytest  # noqa: E402

torch = pytest.importorskip("torch", reason="python3-torch is not installed")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import twin_autocast as twin  # noqa: E402

CLI = os.environ.get("BF16EMU_CLI", "")
needs_cli = pytest.mark.skipif(not CLI or not os.path.exists(CLI), reason="the bf16emu CLI was not built")
LONG = os.environ.get("BF16EMU_TWIN_LONG", "") == "1"
Fr = fractions.Fraction

# ---------------------------------------------------------------------------------------------
# 1. Rounding facts


def round_exact(x, p, emin, emax):
    """The rational x rounded to nearest even in a binary format with p significand bits
    (subnormals below 2^emin, overflow to infinity), as a Python float (exact)."""
    if x == 0:
        return 0.0
    sign = -1.0 if x < 0 else 1.0
    a = abs(x)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if Fr(2) ** e > a:
        e -= 1
    quantum = Fr(2) ** (max(e, emin) - (p - 1))
    q = a / quantum
    n = q.numerator // q.denominator
    rest = q - n
    if rest > Fr(1, 2) or (rest == Fr(1, 2) and n % 2 == 1):
        n += 1
    r = n * quantum
    if r >= Fr(2) ** (emax + 1):
        return sign * float("inf")
    return sign * float(r)


def rn_bf16(x):
    return round_exact(x, 8, -126, 127)


def rn_f32(x):
    return round_exact(x, 24, -126, 127)


def random_finite(rng, count, bits):
    """Random finite bit patterns of a binary16/32 layout with 8 exponent bits: half uniform
    over all finite encodings (subnormals, huge values), half with exponents near 1."""
    width = 16 if bits == np.uint16 else 32
    frac_bits = 7 if width == 16 else 23
    sign = rng.integers(0, 2, count).astype(np.uint64) << np.uint64(width - 1)
    wide = rng.integers(0, 255, count)
    near = rng.integers(127 - 12, 127 + 12, count)
    exp = np.where(np.arange(count) % 2 == 0, wide, near).astype(np.uint64) << np.uint64(frac_bits)
    frac = rng.integers(0, 1 << frac_bits, count).astype(np.uint64)
    return (sign | exp | frac).astype(bits)


def bf16_bits_to_f32(b):
    return (b.astype(np.uint32) << np.uint32(16)).view(np.float32)


def f32_to_bf16_bits(x):
    """numpy float32 (finite) -> BF16 bits, round to nearest even (bit arithmetic)."""
    b = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    b = b + np.uint64(0x7FFF) + ((b >> np.uint64(16)) & np.uint64(1))
    return (b >> np.uint64(16)).astype(np.uint16)


def torch_bf16(values_f32):
    return torch.from_numpy(np.ascontiguousarray(values_f32, dtype=np.float32)).to(torch.bfloat16)


def torch_bits(t):
    """BF16 tensor -> numpy uint16 bits."""
    return t.contiguous().view(torch.int16).numpy().view(np.uint16)


OPS = {"add": (lambda a, b: a + b), "sub": (lambda a, b: a - b), "mul": (lambda a, b: a * b),
       "div": (lambda a, b: a / b)}
PAIRS = 3000


@pytest.mark.parametrize("op", sorted(OPS))
def test_bf16_op_rounds_once_from_fp32(op):
    """BF16 (op) BF16 in torch = RN_bf16(exact): for + - * / the FP32 intermediate rounding is
    innocuous (24 >= 2*8 + 2), so this is the same as rounding the FP32 result once."""
    rng = np.random.default_rng(1000 + sorted(OPS).index(op))
    a = bf16_bits_to_f32(random_finite(rng, PAIRS, np.uint16))
    b = bf16_bits_to_f32(random_finite(rng, PAIRS, np.uint16))
    if op == "div":
        b = np.where(b == 0, np.float32(1), b)
    got = OPS[op](torch_bf16(a), torch_bf16(b)).float().numpy().astype(np.float64)
    fn = OPS[op]
    want = np.array([rn_bf16(fn(Fr(float(x)), Fr(float(y)))) for x, y in zip(a, b)])
    bad = np.flatnonzero(got != want)
    print(f"\nbf16 {op}: {PAIRS} pairs, {bad.size} differ from RN_bf16(exact)")
    assert bad.size == 0, [(float(a[i]), float(b[i]), got[i], want[i]) for i in bad[:5]]


@pytest.mark.parametrize("op", sorted(OPS))
def test_fp32_op_correctly_rounded(op):
    rng = np.random.default_rng(2000 + sorted(OPS).index(op))
    a = random_finite(rng, PAIRS, np.uint32).view(np.float32)
    b = random_finite(rng, PAIRS, np.uint32).view(np.float32)
    if op == "div":
        b = np.where(b == 0, np.float32(1), b)
    got = OPS[op](torch.from_numpy(a), torch.from_numpy(b)).numpy().astype(np.float64)
    fn = OPS[op]
    want = np.array([rn_f32(fn(Fr(float(x)), Fr(float(y)))) for x, y in zip(a, b)])
    bad = np.flatnonzero(got != want)
    print(f"\nfp32 {op}: {PAIRS} pairs, {bad.size} differ from RN_f32(exact)")
    assert bad.size == 0, [(float(a[i]), float(b[i]), got[i], want[i]) for i in bad[:5]]


def test_fp32_to_bf16_rounds_to_nearest_even():
    rng = np.random.default_rng(3000)
    x = random_finite(rng, 4 * PAIRS, np.uint32)
    # A quarter exact ties and a quarter one below / above a tie.
    tie = (x & np.uint32(0xFFFF0000)) | np.uint32(0x8000)
    k = x.size // 4
    x[:k] = tie[:k]
    x[k:2 * k] = tie[k:2 * k] + rng.choice(np.array([-1, 1]), k).astype(np.uint32)
    x = x.view(np.float32)
    t = torch.from_numpy(x)
    got_to = t.to(torch.bfloat16).float().numpy().astype(np.float64)
    dst = torch.empty(x.shape, dtype=torch.bfloat16)
    got_copy = dst.copy_(t).float().numpy().astype(np.float64)
    want = np.array([rn_bf16(Fr(float(v))) for v in x])
    print(f"\nfp32 -> bf16: {x.size} values ({k} ties), .to: {(got_to != want).sum()} differ, "
          f"copy_: {(got_copy != want).sum()} differ")
    assert (got_to == want).all() and (got_copy == want).all()
    # The numpy helper used below for the inputs agrees too.
    assert (bf16_bits_to_f32(f32_to_bf16_bits(x)).astype(np.float64) == want).all()


def test_exp_in_binary64_is_correctly_rounded_to_fp32_for_every_bf16_argument():
    """exp(x) for all 65,536 BF16 x: torch's binary64 exp rounded to FP32 equals the FP32
    rounding of an 80-bit exp (numpy longdouble, error about 2^-63) wherever that value is at
    least 2^-58 (relative) away from an FP32 rounding boundary; the arguments closer than that
    are counted and must be none. (The closest is exp(-2^-25) = 1 - 2^-25 + 2^-51 - ..., 2^-51
    above the midpoint below 1.)"""
    if np.finfo(np.longdouble).nmant < 63:
        pytest.skip("numpy longdouble is not the 80-bit format here")
    x = bf16_bits_to_f32(np.arange(1 << 16, dtype=np.uint32).astype(np.uint16))
    x = x[np.isfinite(x)]
    got = twin.exp_sequential(torch.from_numpy(x)).numpy()
    with np.errstate(over="ignore"):
        e = np.exp(x.astype(np.longdouble))
        lo = (e * (1 - np.longdouble(2) ** -58)).astype(np.float32)
        hi = (e * (1 + np.longdouble(2) ** -58)).astype(np.float32)
    close = lo != hi
    with np.errstate(over="ignore"):
        want = e.astype(np.float32)
    bad = np.flatnonzero((got != want) & ~close)
    print(f"\nexp: {x.size} BF16 arguments, {close.sum()} near a boundary, {bad.size} differ")
    assert close.sum() == 0 and bad.size == 0


def test_log_in_binary64_is_correctly_rounded_to_fp32_for_every_positive_bf16_argument():
    """The same for log (the twin's lse = log(l) + m; l is BF16, so these are all its values)."""
    if np.finfo(np.longdouble).nmant < 63:
        pytest.skip("numpy longdouble is not the 80-bit format here")
    x = bf16_bits_to_f32(np.arange(1, 0x7F80, dtype=np.uint32).astype(np.uint16))
    got = torch.log(torch.from_numpy(x).to(torch.float64)).to(torch.float32).numpy()
    e = np.log(x.astype(np.longdouble))
    lo = (e - abs(e) * np.longdouble(2) ** -58).astype(np.float32)
    hi = (e + abs(e) * np.longdouble(2) ** -58).astype(np.float32)
    close = lo != hi
    bad = np.flatnonzero((got != e.astype(np.float32)) & ~close)
    print(f"\nlog: {x.size} positive BF16 arguments, {close.sum()} near a boundary, {bad.size} differ")
    assert close.sum() == 0 and bad.size == 0


# ---------------------------------------------------------------------------------------------
# Inputs


def sink_inputs(seed, heads, n, d=64, strength=10.0, multiplicity=8, tie_share=0.5, v_skew=0.9, skew_cols=0.5,
                do_bias=1.0):
    """Sink-like Q, K, V, dO of shape (1, heads, n, d), float32 holding BF16 values. Per head,
    one random key is repeated at `multiplicity` positions; a `tie_share` of the query rows
    point at it with gain strength/sqrt(d), so their maximum score repeats; the first
    skew_cols*d columns of V are negative with probability v_skew; dO gets do_bias there."""
    rng = np.random.default_rng(seed)
    shape = (1, heads, n, d)
    q, k, v, do = (rng.standard_normal(shape) for _ in range(4))
    skew = int(round(skew_cols * d))
    for h in range(heads):
        key = bf16_bits_to_f32(f32_to_bf16_bits(rng.standard_normal(d).astype(np.float32)))
        k[0, h, rng.choice(n, size=min(multiplicity, n), replace=False)] = key
        rows = rng.random(n) < tie_share
        q[0, h, rows] = strength / np.sqrt(d) * key + 0.3 * rng.standard_normal((rows.sum(), d))
    v[..., :skew] = np.where(rng.random(v[..., :skew].shape) < v_skew, -1, 1) * np.abs(v[..., :skew])
    do[..., :skew] += do_bias
    return [bf16_bits_to_f32(f32_to_bf16_bits(a.astype(np.float32))) for a in (q, k, v, do)]


def run_cli(tmp_path, q, k, v, causal, stable, threads=2):
    files = {}
    for name, a in (("q", q), ("k", k), ("v", v)):
        files[name] = tmp_path / f"{name}.npy"
        np.save(files[name], a)
    out, out_lse = tmp_path / "o.npy", tmp_path / "lse.npy"
    cmd = [CLI, "attention", "--policy", "paper:autocast", "--q", str(files["q"]), "--k", str(files["k"]), "--v",
           str(files["v"]), "--variant", "stabilized" if stable else "fa2", "--threads", str(threads),
           "--no-ledger", "--out-o", str(out), "--out-lse", str(out_lse)]
    if causal:
        cmd.append("--causal")
    res = subprocess.run(cmd, capture_output=True, text=True)
    assert res.returncode == 0, f"{' '.join(cmd)}\n{res.stderr}"
    o, lse = np.load(out), np.load(out_lse)
    assert o.shape == q.shape and o.dtype == np.float32 and lse.shape == q.shape[:-1]
    return o, lse


def twin_o(q, k, v, causal, stable, mode, with_lse=False):
    o, l, m = twin.forward(torch_bf16(q), torch_bf16(k), torch_bf16(v), causal=causal, stable=stable, mode=mode)
    return (o, twin.lse(l, m).numpy()) if with_lse else o


def ordered(bits):
    """BF16 bits -> integers in value order (+0 and -0 both 0), so |a - b| counts ulps."""
    b = bits.astype(np.int64)
    return np.where(b & 0x8000, -(b & 0x7FFF), b)


def ulp_distance(a_bits, b_bits):
    return np.abs(ordered(a_bits) - ordered(b_bits))


# ---------------------------------------------------------------------------------------------
# The twin on its own (no CLI)


def test_twin_fully_masked_tile_sets_the_stable_max_to_zero():
    """N = 600 causal: rows 0..511 visit key tile 2 (keys 512..599) fully masked (max_neg).
    Standard: m stays the row's true max (some rows' max is negative). Stabilized: that tile
    counts 88 ties at a negative max, so its r_m becomes 0 and m = max(m_old, 0) >= 0.
    Row 0 sees one key: standard, P = 1, l = RN(1 + RN_f32(1e-10)) = 1 and O = V[0] exactly;
    stabilized with a negative score, m = 0 rescales by alpha = exp(s) and O is no longer V[0]
    exactly in every head."""
    q, k, v, _ = sink_inputs(4, 2, 600)  # row 0's one score: +24.6 in head 0, -8.2 in head 1
    o_std, _, m_std = twin.forward(torch_bf16(q), torch_bf16(k), torch_bf16(v), causal=True, stable=False)
    o_stb, _, m_stb = twin.forward(torch_bf16(q), torch_bf16(k), torch_bf16(v), causal=True, stable=True)
    assert (o_std.float().numpy()[0, :, 0] == v[0, :, 0]).all()
    m_std, m_stb = m_std.float().numpy()[0, :, :, 0], m_stb.float().numpy()[0, :, :, 0]
    neg = m_std[:, :512] < 0
    assert neg.sum() > 0
    assert (m_stb[:, :512] >= 0).all()
    assert (m_stb[:, :512][neg] == 0).all()
    row0_neg = neg[:, 0]
    assert row0_neg.any()
    assert (o_stb.float().numpy()[0, ~row0_neg, 0] == v[0, ~row0_neg, 0]).all()
    assert (o_stb.float().numpy()[0, row0_neg, 0] != v[0, row0_neg, 0]).any()


def test_twin_modes_close_to_exact_and_to_each_other():
    q, k, v, _ = sink_inputs(5, 2, 600)
    exact = twin.reference(torch.from_numpy(q), torch.from_numpy(k), torch.from_numpy(v)).numpy()
    seq = twin_o(q, k, v, True, False, "sequential")
    nat = twin_o(q, k, v, True, False, "native")
    for o in (seq, nat):
        err = np.abs(o.float().numpy() - exact)
        assert err.max() < 0.05 and err.mean() < 2e-3
    dist = ulp_distance(torch_bits(seq), torch_bits(nat))
    assert dist.max() <= 8 and (dist == 0).mean() > 0.5


# ---------------------------------------------------------------------------------------------
# 2. Bitwise: sequential twin == CLI

BITWISE_CASES = [(600, True, False), (600, True, True), (256, False, False), (256, False, True)]
BITWISE_SEEDS = [1, 2, 3]


@needs_cli
@pytest.mark.parametrize("n,causal,stable", BITWISE_CASES)
def test_sequential_twin_matches_cli_bit_for_bit(tmp_path, n, causal, stable):
    seeds = BITWISE_SEEDS + ([4, 5, 6, 7] if LONG else [])
    heads = 4 if LONG else 1
    total = total_lse = 0
    for seed in seeds:
        counts = assert_bitwise(tmp_path, f"seed {seed}", *sink_inputs(seed, heads, n)[:3], causal, stable)
        total, total_lse = total + counts[0], total_lse + counts[1]
    print(f"\nbitwise n={n} causal={causal} stable={stable}: {total} elements over {len(seeds)} seeds x {heads} "
          f"heads, 0 mismatches; L: {total_lse} rows, 0 mismatches")


@needs_cli
def test_sequential_twin_matches_cli_where_the_masked_tile_zeroes_the_max(tmp_path):
    """Stabilized, N = 600 causal, 2 heads: rows whose maximum score is negative get m = 0
    from the fully masked second key tile (the authors' all-ties behaviour); bitwise too."""
    q, k, v, _ = sink_inputs(4, 2, 600)
    _, _, m = twin.forward(torch_bf16(q), torch_bf16(k), torch_bf16(v), causal=True, stable=False)
    zeroed = int((m.float().numpy()[0, :, :512, 0] < 0).sum())
    assert zeroed > 0
    total, total_lse = assert_bitwise(tmp_path, "seed 4", q, k, v, True, True)
    print(f"\nbitwise n=600 causal stabilized, seed 4, 2 heads, {zeroed} rows with m zeroed by the masked tile: "
          f"{total} elements, 0 mismatches; L: {total_lse} rows, 0 mismatches")


def assert_bitwise(tmp_path, what, q, k, v, causal, stable):
    """CLI vs sequential twin: O (BF16 bits) and L (FP32 bits) equal everywhere. Returns the
    element counts compared."""
    o_cli, lse_cli = run_cli(tmp_path, q, k, v, causal, stable)
    o_twin, lse_twin = twin_o(q, k, v, causal, stable, "sequential", with_lse=True)
    bad_lse = np.flatnonzero(lse_cli.view(np.uint32).ravel() != lse_twin.view(np.uint32).ravel())
    assert bad_lse.size == 0, f"{what}: L differs in {bad_lse.size} of {lse_cli.size} rows"
    cli_bits = f32_to_bf16_bits(o_cli)
    assert (bf16_bits_to_f32(cli_bits) == o_cli).all(), "CLI's O is not BF16-valued"
    bad = np.flatnonzero(cli_bits.ravel() != torch_bits(o_twin).ravel())
    assert bad.size == 0, (f"{what}: {bad.size} of {o_cli.size} elements differ; first at flat index {bad[0]}: "
                           f"CLI {o_cli.ravel()[bad[0]]}, twin {o_twin.float().numpy().ravel()[bad[0]]}")
    return o_cli.size, lse_cli.size


@needs_cli
@pytest.mark.parametrize("causal", [False, True])
def test_delta_matches_cli_to_one_fp32_ulp_of_any_row(tmp_path, causal):
    """delta = RN_bf16(sum(RN_bf16(dO * O)) in FP32) (the authors' backward runs outside autocast;
    docs/pytorch-twin.md finding 3).
    The CLI writes no delta tensor, only delta - delta_exact's mean and max over rows (--backward
    --json), so those are compared: the twin's delta from its own O, delta_exact = sum dO * O_exact
    in binary64. The tolerance is a thousandth of the smallest change that one FP32 ulp in one
    row (|delta| >= 2^-10) makes to the mean, so a single differing row fails."""
    n = 256
    q, k, v, do = sink_inputs(3, 1, n)
    for name, a in (("q", q), ("k", k), ("v", v), ("do", do)):
        np.save(tmp_path / f"{name}.npy", a)
    cmd = [CLI, "attention", "--policy", "paper:autocast", "--backward", "--json"] + \
          [x for name in ("q", "k", "v", "do") for x in (f"--{name}", str(tmp_path / f"{name}.npy"))] + \
          (["--causal"] if causal else [])
    res = subprocess.run(cmd, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    cli = json.loads(res.stdout)["delta_error"]
    o, _, _ = twin.forward(torch_bf16(q), torch_bf16(k), torch_bf16(v), causal=causal)
    d_twin = twin.delta(torch_bf16(do), o).to(torch.float32).numpy()
    exact = twin.reference(torch.from_numpy(q), torch.from_numpy(k), torch.from_numpy(v), causal).numpy()
    err = d_twin.astype(np.float64) - (do.astype(np.float64) * exact).sum(-1)
    one_ulp = np.spacing(np.maximum(np.abs(d_twin), np.float32(2 ** -10))).min().astype(np.float64) / err.size
    tol = one_ulp / 1000
    print(f"\ndelta causal={causal}: {err.size} rows, mean error twin {err.mean():+.15e} CLI {cli['mean_signed']:+.15e} "
          f"(tolerance {tol:.1e}), max |error| twin {np.abs(err).max():.15e} CLI {cli['max_abs']:.15e}")
    assert cli["n"] == err.size
    assert abs(err.mean() - cli["mean_signed"]) <= tol
    assert abs(np.abs(err).max() - cli["max_abs"]) <= np.spacing(np.float32(cli["max_abs"])) / 1000


# ---------------------------------------------------------------------------------------------
# 3. Native twin vs CLI: agreement and bias over independent heads


def head_bias(o, exact, skew):
    """Per head: mean of O - O_exact over all elements, and over the skewed columns."""
    err = o.astype(np.float64) - exact
    return err.mean(axis=(0, 2, 3)), err[..., :skew].mean(axis=(0, 2, 3))


def z_over_heads(e):
    return e.mean() / (e.std(ddof=1) / np.sqrt(e.size))


STAT_CASES = [(96, True, False), (96, True, True)]
LONG_STAT_CASES = [(128, True, False), (128, True, True), (600, True, False), (600, True, True)]


@needs_cli
@pytest.mark.parametrize("n,causal,stable", STAT_CASES + (LONG_STAT_CASES if LONG else []))
def test_native_twin_agreement_and_bias_over_96_heads(tmp_path, n, causal, stable):
    """96 independent heads of the sink inputs. The CLI's O (bitwise the sequential twin's)
    against the "native" twin (torch's FP32 kernels with autocast's dtypes): agreement rate
    and largest BF16 ulp distance printed and bounded; the signed bias of O (per head the mean
    of O - O_exact over all elements, and over the skewed columns) has the same sign, and its
    z over heads is within max(2, 30 %) of the CLI's. "native-bf16" (torch's CPU BF16 matmul)
    is printed only: it does not accumulate in FP32 (docs/pytorch-twin.md)."""
    heads, d = 96, 64
    q, k, v, _ = sink_inputs(77, heads, n, d)
    o_cli, _ = run_cli(tmp_path, q, k, v, causal, stable)
    cli_bits = f32_to_bf16_bits(o_cli).ravel()
    if LONG:  # the default tier checks this on the cases above
        assert (cli_bits == torch_bits(twin_o(q, k, v, causal, stable, "sequential")).ravel()).all()
    exact = twin.reference(torch.from_numpy(q), torch.from_numpy(k), torch.from_numpy(v), causal).numpy()
    skew = d // 2
    e_cli, s_cli = head_bias(o_cli, exact, skew)
    z_cli, zs_cli = z_over_heads(e_cli), z_over_heads(s_cli)
    print(f"\nn={n} causal={causal} stable={stable}, {heads} heads, {o_cli.size} elements: CLI bias "
          f"{e_cli.mean():+.3e}, z over heads {z_cli:+.2f} (skewed columns {s_cli.mean():+.3e}, z {zs_cli:+.2f})")
    stats = {}
    for mode in ("native", "native-bf16"):
        o = twin_o(q, k, v, causal, stable, mode)
        dist = ulp_distance(cli_bits, torch_bits(o).ravel())
        e, s_ = head_bias(o.float().numpy(), exact, skew)
        stats[mode] = (dist, z_over_heads(e), z_over_heads(s_))
        print(f"  {mode:11s}: agreement {(dist == 0).mean():.5f} ({(dist != 0).sum()} differ), max {dist.max()} ulp, "
              f"bias {e.mean():+.3e}, z {stats[mode][1]:+.2f} (skewed columns {s_.mean():+.3e}, z {stats[mode][2]:+.2f})")
    dist, z_nat, zs_nat = stats["native"]
    assert (dist == 0).mean() > 0.99 and dist.max() <= 4
    if not stable:
        assert abs(z_cli) > 3, "the sink inputs should show a bias under paper:autocast"
    assert np.sign(z_nat) == np.sign(z_cli) and np.sign(zs_nat) == np.sign(zs_cli)
    for a, b in ((z_nat, z_cli), (zs_nat, zs_cli)):
        assert abs(a - b) <= max(2.0, 0.3 * abs(b))


# ---------------------------------------------------------------------------------------------
# 4. The authors' backward (attention.py lines 120-183): sequential twin == CLI --bwd authors

# n, d, tile, causal, stabilized forward, heads. Small tiles give several query and key tiles
# at small n (the model takes the forward's --block-m/--block-n); the last case is the authors'
# own 512 tiles, where rows 0..511 visit a fully masked second key tile.
BWD_CASES = [(96, 32, 32, True, False, 2), (80, 16, 32, False, False, 2), (64, 64, 16, True, True, 1),
             (100, 24, 48, False, True, 2), (600, 64, 512, True, False, 1)]


def run_cli_backward(tmp_path, q, k, v, do, causal, stable, tile, kind):
    files = {}
    for name, a in (("q", q), ("k", k), ("v", v), ("do", do)):
        files[name] = tmp_path / f"{name}.npy"
        np.save(files[name], a)
    outs = {name: tmp_path / f"{name}_out.npy" for name in ("o", "lse", "dq", "dk", "dv")}
    cmd = [CLI, "attention", "--policy", "paper:autocast", "--bwd", kind, "--block-m", str(tile), "--block-n",
           str(tile), "--variant", "stabilized" if stable else "fa2", "--threads", "2", "--no-ledger"]
    cmd += [x for name in ("q", "k", "v", "do") for x in (f"--{name}", str(files[name]))]
    cmd += [x for name in outs for x in (f"--out-{name}", str(outs[name]))]
    if causal:
        cmd.append("--causal")
    res = subprocess.run(cmd, capture_output=True, text=True)
    assert res.returncode == 0, f"{' '.join(cmd)}\n{res.stderr}"
    return {name: np.load(path) for name, path in outs.items()}


def twin_backward(q, k, v, do, causal, stable, tile, autocast):
    o, l, m = twin.forward(torch_bf16(q), torch_bf16(k), torch_bf16(v), causal=causal, stable=stable, tile=tile)
    lse = twin.lse(l, m)
    dq, dk, dv, delta = twin.backward(torch_bf16(q), torch_bf16(k), torch_bf16(v), o, lse, torch_bf16(do),
                                      causal=causal, autocast=autocast, tile=tile)
    return o, lse, dq, dk, dv, delta


@needs_cli
@pytest.mark.parametrize("kind", ["authors", "authors:promote"])
@pytest.mark.parametrize("n,d,tile,causal,stable,heads", BWD_CASES)
def test_authors_backward_matches_cli_bit_for_bit(tmp_path, n, d, tile, causal, stable, heads, kind):
    """dQ, dK, dV of `--bwd authors` (the backward under autocast) and `--bwd authors:promote`
    (eager, the mixed einsums in FP32) equal the twin's bit for bit, on the sink inputs (a key
    repeated 8 times, half the rows pointing at it: tied maxima). O and L are checked first."""
    q, k, v, do = sink_inputs(11 + n, heads, n, d)
    cli = run_cli_backward(tmp_path, q, k, v, do, causal, stable, tile, kind)
    o, lse, dq, dk, dv, _ = twin_backward(q, k, v, do, causal, stable, tile, autocast=kind == "authors")
    assert (cli["o"] == o.float().numpy()).all() and (cli["lse"] == lse.numpy()).all()
    counts = []
    for name, t in (("dq", dq), ("dk", dk), ("dv", dv)):
        got = cli[name]
        assert (bf16_bits_to_f32(f32_to_bf16_bits(got)) == got).all(), f"CLI's {name} is not BF16-valued"
        bad = np.flatnonzero(f32_to_bf16_bits(got).ravel() != torch_bits(t).ravel())
        assert bad.size == 0, (f"{name}: {bad.size} of {got.size} elements differ; first at flat index {bad[0]}: "
                               f"CLI {got.ravel()[bad[0]]}, twin {t.float().numpy().ravel()[bad[0]]}")
        counts.append(got.size)
    tiles = -(-n // tile)
    print(f"\nauthors backward ({kind}) n={n} d={d} tile={tile} ({tiles} x {tiles} tiles) causal={causal} "
          f"stable={stable} heads={heads}: dQ, dK, dV {sum(counts)} elements, 0 mismatches")


def test_authors_backward_readings_differ_and_track_exact():
    """The two readings are different arithmetic (else the bitwise test could not tell them
    apart), and both stay near the binary64 gradients of the same BF16 inputs: relative
    Frobenius error of each of dQ, dK, dV below 5 %."""
    n, d, tile = 96, 32, 32
    q, k, v, do = sink_inputs(5, 2, n, d)
    a = twin_backward(q, k, v, do, True, False, tile, autocast=True)
    b = twin_backward(q, k, v, do, True, False, tile, autocast=False)
    qt, kt, vt = (torch.from_numpy(x).to(torch.float64).requires_grad_() for x in (q, k, v))
    twin.reference(qt, kt, vt, True).backward(torch.from_numpy(do).to(torch.float64))
    differ = 0
    for ga, gb, ex in zip(a[2:5], b[2:5], (qt.grad, kt.grad, vt.grad)):
        differ += int((torch_bits(ga) != torch_bits(gb)).sum())
        for g in (ga, gb):
            rel = float(torch.linalg.norm(g.to(torch.float64) - ex) / torch.linalg.norm(ex))
            assert rel < 0.05, rel
    print(f"\nthe two readings differ in {differ} of {3 * q.size} gradient elements")
    assert differ > 0
