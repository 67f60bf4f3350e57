"""Bad input to the Python package (issue 28, item 9): byte order, thread counts, the size guard,
Ctrl-C in long calls.
Expected values are written out by hand from the formats' definitions (bf16 0x3F80 = 1.0,
0x4000 = 2.0), never computed by bf16emu."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import bf16emu


def test_big_endian_bits_are_read_as_values():
    # 0x3F80 and 0x4000 stored big-endian are still bf16 1.0 and 2.0.
    x = np.array([0x3F80, 0x4000], dtype=">u2")
    y = bf16emu.convert(x, to="fp32", format="bf16")
    assert y.dtype == np.float32
    assert list(y) == [1.0, 2.0]


def test_big_endian_floats_are_read_as_values():
    x = np.array([1.5, -0.25], dtype=">f4")
    y = bf16emu.convert(x, to="bf16")
    assert [hex(v) for v in y] == ["0x3fc0", "0xbe80"]  # 1.5 = 0x3FC0, -0.25 = 0xBE80
    a = np.array([1.0, 2.0], dtype=">f8")
    s = bf16emu.add(a.astype(">f4"), np.array([2.0, 2.0], dtype="<f4"))
    assert list(s) == [3.0, 4.0]


@pytest.mark.parametrize("threads", [2**40, 1025, -1])
def test_threads_out_of_range_is_a_value_error(threads):
    x = np.ones(4, dtype=np.float32)
    with pytest.raises(ValueError, match="argument 'threads'"):
        bf16emu.convert(x, to="bf16", threads=threads)
    q = np.zeros((1, 1, 4, 4))
    with pytest.raises(ValueError, match="argument 'threads'"):
        bf16emu.attention(q, q, q, policy="exact", threads=threads)


@pytest.mark.parametrize("threads", [1.5, "2", None])
def test_threads_of_the_wrong_type_is_a_type_error(threads):
    with pytest.raises(TypeError, match="argument 'threads'"):
        bf16emu.convert(np.ones(4, dtype=np.float32), to="bf16", threads=threads)


def test_attention_size_guard_honours_ulimit_v():
    # In a child: address space capped 24 MB above what it uses once the inputs exist; an
    # attention of 16 heads x 1024 x 64 needs about 60 MB more. The guard refuses it by name
    # (ValueError), before any allocation that could end in MemoryError or a crash.
    code = textwrap.dedent("""
        import resource, numpy as np, bf16emu
        q = np.zeros((1, 16, 1024, 64))
        with open("/proc/self/statm") as f:
            used = int(f.read().split()[0]) * resource.getpagesize()
        cap = used + 24 * 2**20
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
        try:
            bf16emu.attention(q, q, q, policy="exact")
        except ValueError as e:
            print("refused:", e)
        else:
            print("ran")
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=os.environ, timeout=120)
    assert r.returncode == 0, r.stderr[-500:]
    assert r.stdout.startswith("refused:"), r.stdout + r.stderr[-500:]
    assert "ulimit -v" in r.stdout


CTRL_C = textwrap.dedent("""
    import os, signal, sys, threading, time
    import numpy as np, bf16emu
    kind = sys.argv[1]
    if kind == "elementwise":
        x = np.linspace(-3, 3, 12_000_000, dtype=np.float32)
        run = lambda: bf16emu.fma(x, x, x, rounding="stochastic", threads=1)  # about 1 s on one core
    elif kind == "gemm":
        a = np.full((128, 1024), 0x3F80, dtype=np.uint16)  # bf16 1.0
        b = np.full((1024, 1024), 0x3F80, dtype=np.uint16)
        run = lambda: bf16emu.gemm(a, b, arch="sm90", a_format="bf16", threads=1)  # 2^27 products, 128 rows
    else:
        q = np.linspace(-1, 1, 8 * 256 * 64).reshape(1, 8, 256, 64)
        run = lambda: bf16emu.attention(q, q, q, policy="fa2:sm80", ledger=True, reference=True, threads=1)
    bf16emu.sqrt(np.ones(4, dtype=np.float32))  # the first call's imports are not part of the timing
    t0 = time.monotonic(); run(); full = time.monotonic() - t0
    threading.Timer(full / 4, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
    t0 = time.monotonic()
    try:
        run()
    except KeyboardInterrupt:
        print(f"interrupted after {time.monotonic() - t0:.3f} s of {full:.3f} s")
    else:
        print(f"not interrupted ({time.monotonic() - t0:.3f} s of {full:.3f} s)")
""")


@pytest.mark.parametrize("kind", ["elementwise", "gemm", "attention"])
def test_ctrl_c_interrupts_a_long_call(kind):
    # A SIGINT a quarter of the way into a call that runs with the GIL released raises
    # KeyboardInterrupt in the caller before the call would have finished (the 0.7 leaves room for
    # the 50 ms check interval and the last item in flight).
    r = subprocess.run([sys.executable, "-c", CTRL_C, kind], capture_output=True, text=True, env=os.environ,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-800:]
    assert r.stdout.startswith("interrupted after"), r.stdout + r.stderr[-500:]
    took, full = (float(w) for w in r.stdout.split()[2:6:3])
    assert took < 0.7 * full, r.stdout


def test_gemm_trace_follows_the_two_block_add_presets():
    # sm90 fp8 mma.sync (e4m3 -> fp16) adds its 32 products as two blocks of 16, the first from
    # +0, then C (docs/tensor-cores.md). All ones and C = 1: block 0 sums to 16 (fp16 0x4C00)
    # from c = 0, block 1 to 32 (0x5000) from 16, D = 33 (0x5020). A fused chain would start
    # block 0 from C (0x3C00) instead.
    a = np.full((1, 32), 0x38, dtype=np.uint8)  # e4m3 1.0
    b = np.full((32, 1), 0x38, dtype=np.uint8)
    c = np.ones((1, 1), dtype=np.float16)
    d, tr = bf16emu.gemm(a, b, c, arch="sm90", kind="mma", a_format="e4m3", trace=(0, 0))
    assert d.view(np.uint16)[0, 0] == 0x5020
    blocks = tr["blocks"]
    assert [(x["c_bits"], x["d_bits"]) for x in blocks] == [(0, 0x4C00), (0x4C00, 0x5000)]


# ---------------------------------------------------------------------------------------------
# Issue 46: no call aborts when the system refuses threads. parallel_for stops starting threads
# and runs the rest on the ones it has (include/bf16emu/parallel.hpp): the same bits, exit 0.
# Each case runs in a child under a 4 GiB address-space limit (1024 threads of 8 MiB stacks do not
# fit), or under a process limit of 8 for its user (root is exempt from RLIMIT_NPROC: as root the
# child first becomes nobody).

def _limits(kind):
    import resource

    def apply():
        if kind == "as":
            cap = 4 * 2**30
            resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
        else:
            resource.setrlimit(resource.RLIMIT_NPROC, (8, 8))
    return apply


def _run_limited(argv, kind, timeout=300):
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    extra = {}
    if kind == "nproc" and os.geteuid() == 0:
        extra = {"user": 65534, "group": 65534, "extra_groups": []}
    return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=timeout, preexec_fn=_limits(kind),
                          cwd="/", **extra)


THREADS_CHILD = textwrap.dedent("""
    import sys
    import numpy as np, bf16emu
    what = sys.argv[1]
    if what == "convert":
        y = bf16emu.convert(np.ones(2**26, np.float32), to="bf16", threads=1024)
        assert y.dtype == np.uint16 and bool((y == 0x3F80).all())  # bf16 1.0
    elif what == "gemm":
        rng = np.random.default_rng(1)
        a = bf16emu.convert(rng.standard_normal((4096, 16)).astype(np.float32), to="bf16")
        b = bf16emu.convert(rng.standard_normal((16, 8)).astype(np.float32), to="bf16")
        d = bf16emu.gemm(a, b, a_format="bf16", arch="sm90", threads=600)
        assert np.array_equal(d.view(np.uint32), bf16emu.gemm(a, b, a_format="bf16", arch="sm90",
                                                               threads=1).view(np.uint32))
    else:
        q = np.random.default_rng(2).standard_normal((1, 1024, 16, 8))
        r = bf16emu.attention(q, q, q, policy="fa2:sm80", ledger=False, reference=False, threads=1024)
        r1 = bf16emu.attention(q, q, q, policy="fa2:sm80", ledger=False, reference=False, threads=1)
        assert np.array_equal(r["o"], r1["o"])
    print("ok")
""")


@pytest.mark.parametrize("kind", ["as", "nproc"])
@pytest.mark.parametrize("what", ["convert", "gemm", "attention"])
def test_more_threads_than_the_system_gives_do_not_abort(what, kind):
    r = _run_limited([sys.executable, "-c", THREADS_CHILD, what], kind)
    assert r.returncode == 0 and r.stdout.strip() == "ok", (r.returncode, r.stdout[-300:], r.stderr[-800:])
    assert "terminate" not in r.stderr


@pytest.mark.parametrize("kind", ["as", "nproc"])
def test_cli_threads_1024_does_not_abort(kind):
    cli = os.environ.get("BF16EMU_CLI", "")
    if not cli or not os.path.exists(cli):
        pytest.skip("the bf16emu CLI was not built")
    r = _run_limited([cli, "attention", "--heads", "1024", "--n", "64", "--d", "16", "--threads", "1024",
                      "--no-ledger"], kind)
    assert r.returncode == 0, (r.returncode, r.stderr[-800:])
    assert "terminate" not in r.stderr
