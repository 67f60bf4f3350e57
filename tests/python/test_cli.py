"""Each function of the package against the bf16emu CLI on the same inputs (the CLI path comes
from BF16EMU_CLI, set by tests/python/CMakeLists.txt; skipped without it)."""

import json
import os
import subprocess

import numpy as np
import pytest

import bf16emu

CLI = os.environ.get("BF16EMU_CLI", "")
pytestmark = pytest.mark.skipif(not CLI or not os.path.exists(CLI), reason="the bf16emu CLI was not built")


def cli_json(*args):
    out = subprocess.run([CLI, *args, "--json"], check=True, capture_output=True, text=True).stdout
    return json.loads(out)


BITS = {
    "bf16": [0x3F80, 0x3B80, 0xC097, 0x0001, 0x7F7F, 0x8000, 0x7F80, 0x7FC1, 0x4049, 0x3EAB],
    "fp16": [0x3C00, 0x1400, 0xC0E0, 0x0001, 0x7BFF, 0x8000, 0x7C00, 0x7E01, 0x4248, 0x3555],
    "fp32": [0x3F800000, 0x33800000, 0xC01A0E2E, 0x00000001, 0x7F7FFFFF, 0x80000000, 0x7F800000, 0x7FC00001,
             0x40490FDB, 0x3EAAAAAB],
    "e4m3": [0x38, 0x20, 0xC1, 0x01, 0x7E, 0x80, 0x7F, 0x44, 0x3B, 0x29],
}
DTYPE = {"bf16": np.uint16, "fp16": np.uint16, "fp32": np.uint32, "e4m3": np.uint8}


def arr(fmt, bits):
    a = np.array(bits, dtype=DTYPE[fmt])
    return a.view(np.float32) if fmt == "fp32" else a


def result_bits(x):
    x = np.asarray(x)
    return [int(v) for v in x.view({1: np.uint8, 2: np.uint16, 4: np.uint32}[x.dtype.itemsize]).reshape(-1)]


@pytest.mark.parametrize("fmt", list(BITS))
@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "fma", "sqrt"])
@pytest.mark.parametrize("rounding", ["nearest_even", "toward_zero", "upward"])
def test_arith_matches_cli(fmt, op, rounding):
    fn = getattr(bf16emu, op)
    n = {"sqrt": 1, "fma": 3}.get(op, 2)
    b = BITS[fmt]
    operands = [b, b[3:] + b[:3], b[7:] + b[:7]][:n]
    got, mask, flags = fn(*[arr(fmt, o) for o in operands], format=None if fmt == "fp32" else fmt,
                          rounding=rounding, return_flags=True)
    got = result_bits(got)
    all_flags = 0
    for i in range(len(b)):
        hexes = [f"0x{o[i]:X}" for o in operands]
        d = cli_json(op, "-f", fmt, "-r", rounding, *hexes)
        assert int(d["result"]["bits"], 16) == got[i], (op, fmt, rounding, hexes)
        element_flags = sum(int(bf16emu.Flags[f.upper()]) for f in d["flags"])
        assert int(mask[i]) == element_flags, (op, fmt, rounding, hexes)  # each element's own flags
        all_flags |= element_flags
    assert int(flags) == all_flags


@pytest.mark.parametrize("src,dst", [("fp32", "bf16"), ("fp32", "fp16"), ("fp32", "e4m3"), ("bf16", "fp32"),
                                     ("fp16", "e4m3")])
def test_convert_matches_cli(src, dst):
    got = bf16emu.convert(arr(src, BITS[src]), format=None if src == "fp32" else src, to=dst)
    got = result_bits(got)
    for i, b in enumerate(BITS[src]):
        d = cli_json("convert", "-f", src, "-t", dst, f"0x{b:X}")
        assert int(d["result"]["bits"], 16) == got[i], (src, dst, hex(b))


def test_trace_matches_cli():
    d = cli_json("add", "-f", "fp32", "-t", "bf16", "--trace", "-2.4071154594421387", "-2.296875")
    t = bf16emu.trace("add", -2.4071154594421387, -2.296875, to="bf16")
    assert int(d["result"]["bits"], 16) == t["result_bits"]
    ev = d["steps"][-1]["rounding"][-1]
    assert (ev["guard"], ev["round"], ev["sticky"], ev["decision"], ev["error"]) == (
        t["guard"], t["round"], t["sticky"], t["decision"], t["error"])
    assert len(t["steps"]) == len(d["steps"]) == 2


def test_mma_matches_cli():
    rng = np.random.default_rng(5)
    K = 16
    a = (rng.integers(0, 1 << 16, size=(16, K), dtype=np.uint32) & 0xBFFF).astype(np.uint16)  # finite bf16
    b = (rng.integers(0, 1 << 16, size=(K, 8), dtype=np.uint32) & 0x3FFF).astype(np.uint16)
    c = rng.standard_normal((16, 8)).astype(np.float32)
    d = bf16emu.mma(a, b, c, arch="sm80", a_format="bf16")
    lines = []
    for i in range(16):
        for j in range(8):
            row = " ".join(f"0x{v:X}" for v in a[i])
            col = " ".join(f"0x{v:X}" for v in b[:, j])
            lines.append(f"{row} {col} 0x{int(c[i, j:j + 1].view(np.uint32)[0]):X}")
    out = subprocess.run([CLI, "mma", "--arch", "sm80", "--a-format", "bf16"], input="\n".join(lines) + "\n",
                         check=True, capture_output=True, text=True).stdout.split()
    assert [int(x, 16) for x in out] == result_bits(d)


def test_attention_matches_cli(tmp_path):
    rng = np.random.default_rng(9)
    shape = (1, 2, 32, 16)
    files = {}
    tensors = {}
    for name in ("q", "k", "v"):
        x32 = rng.standard_normal(shape).astype(np.float32)
        bits = bf16emu.convert(x32, to="bf16")
        tensors[name] = bits
        files[name] = tmp_path / f"{name}.npy"
        np.save(files[name], bits)
    r = bf16emu.attention(tensors["q"], tensors["k"], tensors["v"], policy="fa2:sm80", format="bf16")
    o_file = tmp_path / "o.npy"
    out = subprocess.run([CLI, "attention", "--policy", "fa2:sm80", "--q", str(files["q"]), "--k", str(files["k"]),
                          "--v", str(files["v"]), "--out-o", str(o_file), "--json"], check=True,
                         capture_output=True, text=True).stdout
    d = json.loads(out)
    o_cli = np.load(o_file)
    np.testing.assert_array_equal(r["o"].astype(np.float32).reshape(o_cli.shape), o_cli)
    for site, counts in d["sites"].items():
        assert r["ledger"]["sites"][site]["count"] == counts["count"], site
        assert r["ledger"]["sites"][site]["ties"] == counts["ties"], site
    assert r["output_error"]["n"] == d["output_error"]["n"]
    assert r["output_error"]["max_abs"] == d["output_error"]["max_abs"]


def _as_json(x):
    """A Python result as its JSON ledger spells it: str keys (ulp_hist's are ints), null for NaN/Inf."""
    if isinstance(x, dict):
        return {str(k): _as_json(v) for k, v in x.items()}
    if isinstance(x, float) and not np.isfinite(x):
        return None
    return x


@pytest.mark.parametrize("backward", ["", "reference", "tiled"])
def test_attention_ledger_same_fields_as_cli(tmp_path, backward):
    """The ledger and the error summaries come from one field list (src/io/attention_fields.cpp):
    the CLI's --json and bf16emu.attention(..., ledger=True) carry the same keys and values."""
    rng = np.random.default_rng(11)
    shape = (1, 2, 48, 16)
    tensors, args = {}, []
    for name in ("q", "k", "v", "do"):
        if name == "do" and not backward:
            break
        tensors[name] = bf16emu.convert(rng.standard_normal(shape).astype(np.float32), to="bf16")
        np.save(tmp_path / f"{name}.npy", tensors[name])
        args += [f"--{name}", str(tmp_path / f"{name}.npy")]
    common = dict(policy="fa2:sm80", variant="fa2", format="bf16", ledger=True, reference=True)
    if backward:
        r = bf16emu.attention_backward(tensors["q"], tensors["k"], tensors["v"], tensors["do"], backward=backward,
                                       **common)
        args += ["--backward", "--bwd", backward]
    else:
        r = bf16emu.attention(tensors["q"], tensors["k"], tensors["v"], **common)
    d = cli_json("attention", "--policy", "fa2:sm80", "--variant", "fa2", *args)
    assert set(r["ledger"]) == {"sites", "p_equals_one"}
    summaries = ["output_error"] + (["delta_error", "grad_error"] if backward else [])
    for key in ["sites", "p_equals_one"]:
        assert _as_json(r["ledger"][key]) == d[key], key
    for key in summaries:
        assert _as_json(r[key]) == d[key], key
    assert r["ledger"]["sites"] and "z_rows_scope" in r["output_error"]  # not vacuous
