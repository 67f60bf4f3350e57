"""One rule, one reason, every front end: each bad combination of attention options is sent
through the CLI (`bf16emu attention`), the Python function (bf16emu.attention /
attention_backward) and bf16emu.torch.attention, and all three must refuse it with the same
reason, each naming the option in its own words (--beta; argument 'beta').

The spellings below are this test's own table (not the one in src/io), so a front end that
names the wrong option, or words the reason differently, fails here."""

import os
import re
import subprocess

import numpy as np
import pytest

import bf16emu

CLI = os.environ.get("BF16EMU_CLI", "")

# option -> (the CLI's flag, the Python keyword)
SPELLING = {
    "policy": ("--policy", "policy"), "variant": ("--variant", "variant"), "beta": ("--beta", "beta"),
    "tie_tol": ("--tie-tol", "tie_tol"), "block_m": ("--block-m", "block_m"), "block_n": ("--block-n", "block_n"),
    "sites": ("--site-precision", "sites"), "backward": ("--bwd", "backward"),
    "bwd_block_m": ("--bwd-block-m", "bwd_block_m"), "bwd_block_n": ("--bwd-block-n", "bwd_block_n"),
}

# (rule, options as {python keyword: value}, the option at fault, words the reason must hold).
# The CLI flags are derived from SPELLING; "sites" is given in its CLI text form.
TABLE = [
    ("stabilized beta < 1", {"variant": "stabilized", "beta": 0.5}, "beta", "must be a finite number > 1"),
    ("beta = 1 is the unstabilized kernel", {"beta": 1.0}, "beta", "must be a finite number > 1"),
    ("negative tie tolerance", {"variant": "stabilized", "tie_tol": -0.001}, "tie_tol", "finite number >= 0"),
    ("fa2 key block not a k chunk", {"block_n": 24}, "block_n", "multiple of 16 under fa2"),
    ("query block past 2^20", {"block_m": 2_000_000}, "block_m", "must be in 1..2^20"),
    ("tiled with site overrides", {"backward": "tiled", "sites": "row_sum=fp32"}, "backward",
     "does not model site overrides"),
    ("tiled under paper:autocast", {"backward": "tiled", "policy": "paper:autocast"}, "backward",
     "does not model paper:autocast"),
    ("authors' backward under fa2", {"backward": "authors"}, "backward", "need policy paper:autocast"),
    ("tiled key-row block not a k chunk", {"backward": "tiled", "bwd_block_m": 24}, "bwd_block_m",
     "multiple of 16 under fa2"),
    ("tiled block past 2^20", {"backward": "tiled", "bwd_block_n": 2_000_000}, "bwd_block_n",
     "must be in 1..2^20"),
    ("tiled settings without tiled", {"backward": "reference", "bwd_block_m": 32}, "bwd_block_m",
     "need"),
    ("unknown policy", {"policy": "fa2:sm99"}, "policy", "fa2:sm99"),
    ("unknown variant", {"variant": "flash"}, "variant", "flash"),
    ("unknown backward", {"backward": "fast"}, "backward", "fast"),
    ("unknown site", {"sites": "bogus=fp32"}, "sites", "unknown site"),
]

N, D = 16, 16


def _canonical(msg: str, front: int) -> str:
    """The message with every option's spelling in `front` (0 CLI, 1 Python) replaced by <name>."""
    for name, spell in sorted(SPELLING.items(), key=lambda kv: -len(kv[1][front])):
        word = spell[0] if front == 0 else f"argument '{spell[1]}'"
        msg = msg.replace(word, f"<{name}>")
    return msg.strip()


def _cli(opts):
    if not (CLI and os.path.exists(CLI)):
        pytest.skip("needs the CLI (BF16EMU_CLI)")
    args = [CLI, "attention", "--n", str(N), "--d", str(D), "--heads", "1"]
    for key, val in opts.items():
        args += [SPELLING[key][0], str(val)]
    r = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2, (args, r.returncode, r.stdout[-300:], r.stderr[-300:])
    assert r.stderr.startswith("bf16emu: "), r.stderr
    return r.stderr[len("bf16emu: "):].strip().splitlines()[0]


def _python(opts):
    q = np.random.default_rng(0).standard_normal((1, 1, N, D))
    kw = dict(opts)
    with pytest.raises(ValueError) as e:
        if "backward" in kw:
            bf16emu.attention_backward(q, q, q, np.ones_like(q), **kw)
        else:
            bf16emu.attention(q, q, q, **kw)
    return str(e.value)


def _torch(opts):
    torch = pytest.importorskip("torch")
    import bf16emu.torch as et
    t = torch.randn(1, 1, N, D, requires_grad=True)
    kw = dict(opts)
    kw.setdefault("policy", "fa2:sm80")
    with pytest.raises(ValueError) as e:  # at the call: a rule of the backward too, not in loss.backward()
        et.attention(t, t, t, **kw)
    return str(e.value)


@pytest.mark.parametrize("rule,opts,arg,words", TABLE, ids=[row[0] for row in TABLE])
def test_every_front_end_refuses_with_the_same_reason(rule, opts, arg, words):
    cli, py, tch = _cli(opts), _python(opts), _torch(opts)
    # each names the option at fault in its own words ...
    assert SPELLING[arg][0] in cli, cli
    assert f"argument '{SPELLING[arg][1]}'" in py, py
    assert f"argument '{SPELLING[arg][1]}'" in tch, tch
    # ... and gives the same reason
    assert words in cli and words in py, (cli, py)
    assert _canonical(cli, 0) == _canonical(py, 1) == _canonical(tch, 1), (cli, py, tch)


def test_the_table_covers_every_rule_of_the_core():
    # Each option of the core's rule list (include/bf16emu/attention/rules.hpp) is at fault in
    # at least one row: a new option there without a row here fails.
    header = os.path.join(os.path.dirname(__file__), "..", "..", "include", "bf16emu", "attention", "rules.hpp")
    text = open(header).read()
    enum = re.search(r"enum class option : std::uint8_t \{([^}]*)\}", text)[1]
    options = {w.strip() for w in enum.split(",") if w.strip()}
    named = {row[2] for row in TABLE} | {"scale"}  # scale: Python only (test below)
    assert options <= named, options - named


def test_scale_rule_in_python_and_torch():
    torch = pytest.importorskip("torch")
    import bf16emu.torch as et
    q = np.zeros((1, 1, 4, 4))
    with pytest.raises(ValueError, match=r"argument 'scale' must be a positive finite number"):
        bf16emu.attention(q, q, q, scale=-1.0)
    t = torch.zeros(1, 1, 4, 4)
    with pytest.raises(ValueError, match=r"argument 'scale' must be a positive finite number"):
        et.attention(t, t, t, policy="fa2:sm80", scale=float("inf"))


def test_the_standard_variant_takes_any_key_block():
    # The rule is fa2's k chunks, which the standard variant (whole rows) does not have: all
    # three front ends accept what the rule allows.
    q = np.random.default_rng(0).standard_normal((1, 1, N, D))
    r = bf16emu.attention(q, q, q, variant="standard", block_n=24, ledger=False, reference=False)
    assert r["block_n"] == 24
    if CLI and os.path.exists(CLI):
        p = subprocess.run([CLI, "attention", "--n", str(N), "--d", str(D), "--variant", "standard",
                            "--block-n", "24", "--no-ledger"], capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, p.stderr


def test_a_missing_preset_is_explained_alike_in_the_cli_and_python():
    # One message (src/io/preset_lookup): the same combination, the same reason and the same
    # presets listed; the alternatives in each front end's own option words.
    if not (CLI and os.path.exists(CLI)):
        pytest.skip("needs the CLI (BF16EMU_CLI)")
    r = subprocess.run([CLI, "mma", "--arch", "sm90", "--instr", "mma", "--a-format", "bf16", "--out", "fp16"],
                       input="", capture_output=True, text=True, timeout=60)
    assert r.returncode == 2, r.stderr
    cli = r.stderr[len("bf16emu: "):].strip()
    a = np.zeros((16, 16), np.uint16)
    with pytest.raises(ValueError) as e:
        bf16emu.gemm(a, a, a_format="bf16", arch="sm90", kind="mma", c_format="fp16")
    py = str(e.value)
    head = "no preset for sm90 mma bf16 -> fp16"
    assert cli.startswith(head) and py.startswith(head), (cli, py)
    assert cli.split("; sm90 has:")[1] == py.split("; sm90 has:")[1]
    assert "--instr wgmma --out fp32" in cli and "kind='wgmma', c_format='fp32'" in py, (cli, py)
    assert "--" not in py.split("; sm90 has:")[0], py  # no CLI flag in a Python message
