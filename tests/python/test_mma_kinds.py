"""bf16emu.mma / gemm on the mixed-format and block-scaled kinds (sm100 tcgen05, sm120 mma.sync),
the AMD CDNA MFMA instructions and the zero-term exponent option (issue 33, items 5 and 6).
Expected values are hand-derived (the derivation in the comment) or the CLI's on the same
lines (BF16EMU_CLI, set by tests/python/CMakeLists.txt)."""

import os
import subprocess

import numpy as np
import pytest

import bf16emu

CLI = os.environ.get("BF16EMU_CLI", "")
need_cli = pytest.mark.skipif(not CLI or not os.path.exists(CLI), reason="the bf16emu CLI was not built")


def u32(x):
    return [int(v) for v in np.asarray(x, np.float32).view(np.uint32).reshape(-1)]


def cli_lines(args, lines):
    out = subprocess.run([CLI, "mma", *args], input="\n".join(lines) + "\n", check=True, capture_output=True,
                         text=True).stdout.split()
    return [int(x, 16) for x in out]


def test_nvf4_ue4m3_block32_probe():
    # sm120 kind::mxf4nvf4, ue4m3 factors per 32 k-elements: 1*1 (e2m1 0x2) at k 0, 16 and 32, A
    # factors 2 (0x40) and 4 (0x48), B factors 1 (0x38): 2 + 2 + 4 = 8.
    a = np.zeros((16, 64), np.uint8)
    b = np.zeros((64, 8), np.uint8)
    a[0, [0, 16, 32]] = 0x2
    b[[0, 16, 32], 0] = 0x2
    sa = np.full((16, 2), 0x38, np.uint8)
    sa[0] = [0x40, 0x48]
    sb = np.full((2, 8), 0x38, np.uint8)
    d = bf16emu.mma(a, b, arch="sm120", kind="mxf4nvf4", a_format="e2m1", scale_format="ue4m3", scale_vec=32,
                    scale_a=sa, scale_b=sb)
    assert d.dtype == np.float32 and d.shape == (16, 8)
    assert float(d[0, 0]) == 8.0 and (d.reshape(-1)[1:] == 0).all()
    with pytest.raises(ValueError, match="takes a 16x64"):
        bf16emu.mma(a[:, :32], b[:32], arch="sm120", kind="mxf4nvf4", a_format="e2m1", scale_format="ue4m3",
                    scale_vec=32, scale_a=sa[:, :1], scale_b=sb[:1])


def test_zero_scale_factor_exponent():
    # A zero ue4m3 factor (A, first 32 k) against B 2^8 (0x78); the other factors 2^-9 (0x01); zero
    # products; c = 2^-30 + 2^-40. e_zero: that run's exponent -6 + 8 = 2, lsb 2^-33, c loses 2^-40;
    # mmasim: -126 + 8, emax -12, lsb 2^-47, c kept.
    a = np.zeros((1, 64), np.uint8)
    b = np.zeros((64, 1), np.uint8)
    sa, sb = np.uint8([[0x00, 0x01]]), np.uint8([[0x78], [0x01]])
    c = np.array([[0x30802000]], np.uint32).view(np.float32)
    kw = dict(arch="sm120", kind="mxf4nvf4", a_format="e2m1", scale_format="ue4m3", scale_vec=32, scale_a=sa,
              scale_b=sb)
    assert u32(bf16emu.gemm(a, b, c, **kw)) == [0x30800000]
    assert u32(bf16emu.gemm(a, b, c, zero_exp="mmasim", **kw)) == [0x30802000]


def test_zero_product_exponent_block_preset():
    # sm90 bf16: 0 * 2^127 at k0, 0x35ff * 0x35ff at k1, C = 0: 0x2c7e0100 with e_zero, +0 under
    # MMA-Sim's rule (the zero product's exponent -126 + 127 = 1 cuts the small product).
    a = np.zeros((1, 16), np.uint16)
    b = np.zeros((16, 1), np.uint16)
    a[0, 1], b[0, 0], b[1, 0] = 0x35FF, 0x7F00, 0x35FF
    assert u32(bf16emu.gemm(a, b, arch="sm90", a_format="bf16")) == [0x2C7E0100]
    assert u32(bf16emu.gemm(a, b, arch="sm90", a_format="bf16", zero_exp="default")) == [0x2C7E0100]
    assert u32(bf16emu.gemm(a, b, arch="sm90", a_format="bf16", zero_exp="mmasim")) == [0]
    with pytest.raises(ValueError, match="zero_exp"):
        bf16emu.gemm(a, b, arch="sm90", a_format="bf16", zero_exp="nope")


def test_mxf8f6f4_mixed_operands_and_tensors():
    torch = pytest.importorskip("torch")
    # sm100 tcgen05 kind::mxf8f6f4: e4m3 1.0 (0x38) * e2m1 1.0 (0x2) with factors 2^3 and 2^-1: 4.
    a = np.zeros((2, 32), np.uint8)
    b = np.zeros((32, 3), np.uint8)
    a[1, 5], b[5, 2] = 0x38, 0x2
    sa, sb = np.full((2, 1), 0x82, np.uint8), np.full((1, 3), 0x7E, np.uint8)
    d = bf16emu.gemm(torch.from_numpy(a), torch.from_numpy(b), arch="sm100", kind="mxf8f6f4", a_format="e4m3",
                     b_format="e2m1", scale_a=torch.from_numpy(sa), scale_b=torch.from_numpy(sb))
    assert isinstance(d, torch.Tensor) and d.dtype == torch.float32
    assert d[1, 2].item() == 4.0 and float(d.abs().sum()) == 4.0


@need_cli
def test_scaled_kinds_match_cli():
    rng = np.random.default_rng(33)
    M, N = 3, 4
    for kind, fmt, sf, vec, K in (("mxf4nvf4", "e2m1", "ue4m3", 32, 128), ("mxf4", "e2m1", "ue8m0", 32, 64),
                                  ("mxf8f6f4", "e5m2", "ue8m0", 32, 64)):
        a = rng.integers(0, 16 if fmt == "e2m1" else 256, size=(M, K), dtype=np.uint8)
        b = rng.integers(0, 16 if fmt == "e2m1" else 256, size=(K, N), dtype=np.uint8)
        lo, hi = (0x30, 0x48) if sf == "ue4m3" else (120, 134)
        sa = rng.integers(lo, hi, size=(M, K // vec), dtype=np.uint8)
        sb = rng.integers(lo, hi, size=(K // vec, N), dtype=np.uint8)
        c = rng.standard_normal((M, N)).astype(np.float32)
        arch = "sm120"
        for zero_exp in (None, "mmasim"):
            d = bf16emu.gemm(a, b, c, arch=arch, kind=kind, a_format=fmt, scale_format=sf, scale_vec=vec,
                             scale_a=sa, scale_b=sb, zero_exp=zero_exp)
            lines = [" ".join([f"0x{v:x}" for v in a[i]] + [f"0x{v:x}" for v in b[:, j]] +
                              [f"0x{v:02x}" for v in sa[i]] + [f"0x{v:02x}" for v in sb[:, j]] +
                              [f"0x{u32(c[i, j])[0]:08x}"]) for i in range(M) for j in range(N)]
            args = ["--arch", arch, "--kind", kind, "--a-format", fmt, "--scale-format", sf, "--scale-vec",
                    str(vec), "--k", str(K)] + (["--zero-exp", zero_exp] if zero_exp else [])
            assert cli_lines(args, lines) == u32(d), (kind, zero_exp)


def test_amd_mfma_probes():
    # docs/tensor-cores.md, AMD probe R (cdna3 bf16, O4): 1*1 + (-2^-30) rounds down: 0x3f7fffff.
    a = np.zeros((1, 8), np.uint16)
    b = np.zeros((8, 1), np.uint16)
    a[0, 0] = b[0, 0] = 0x3F80
    c = np.array([[0xB0800000]], np.uint32).view(np.float32)
    assert u32(bf16emu.gemm(a, b, c, arch="cdna3", a_format="bf16")) == [0x3F7FFFFF]
    assert u32(bf16emu.gemm(a, b, c, arch="cdna1", a_format="bf16")) == [0x3F800000]
    # Probe H (O6): bf8 (FNUZ bytes) 0x40 0x81 * 0x40 0x01 on v_mfma_f32_32x32x16_bf8_bf8, 0x3f7fffff.
    a8 = np.zeros((1, 16), np.uint8)
    b8 = np.zeros((16, 1), np.uint8)
    a8[0, :2] = [0x40, 0x81]
    b8[:2, 0] = [0x40, 0x01]
    assert u32(bf16emu.gemm(a8, b8, arch="cdna3", kind="v_mfma_f32_32x32x16_bf8_bf8")) == [0x3F7FFFFF]
    # One whole instruction: 32x32x8 bf16 with ones gives 8 everywhere; the shape is checked.
    ones = np.full((32, 8), 0x3F80, np.uint16)
    d = bf16emu.mma(ones, ones.T.copy(), arch="mi300", kind="v_mfma_f32_32x32x8_bf16")
    assert d.shape == (32, 32) and (d == 8.0).all()
    with pytest.raises(ValueError, match="takes a 32x8"):
        bf16emu.mma(ones[:16], ones.T.copy(), arch="cdna3", kind="v_mfma_f32_32x32x8_bf16")
    with pytest.raises(ValueError, match="zero_exp"):
        bf16emu.gemm(a, b, arch="cdna3", a_format="bf16", zero_exp="mmasim")
    with pytest.raises(ValueError, match="unknown AMD instruction"):
        bf16emu.gemm(a, b, arch="cdna3", kind="v_mfma_nope")


@need_cli
def test_amd_matches_cli():
    rng = np.random.default_rng(6)
    a = rng.standard_normal((4, 16)).astype(np.float16)
    b = rng.standard_normal((16, 3)).astype(np.float16)
    c = rng.standard_normal((4, 3)).astype(np.float32)
    d = bf16emu.gemm(a, b, c, arch="cdna2", kind="v_mfma_f32_16x16x16f16")
    hx = lambda v: f"0x{int(np.array([v], np.float16).view(np.uint16)[0]):04x}"
    lines = [" ".join([hx(v) for v in a[i]] + [hx(v) for v in b[:, j]] + [f"0x{u32(c[i, j])[0]:08x}"])
             for i in range(4) for j in range(3)]
    assert cli_lines(["--arch", "cdna2", "--instr", "v_mfma_f32_16x16x16f16"], lines) == u32(d)


def test_bad_scaled_input():
    a = np.zeros((1, 64), np.uint8)
    b = np.zeros((64, 1), np.uint8)
    s = np.zeros((1, 2), np.uint8)
    with pytest.raises(ValueError, match="scale_b"):  # 2 factors per column needed, 4 given
        bf16emu.gemm(a, b, arch="sm120", kind="mxf4", a_format="e2m1", scale_a=s, scale_b=np.zeros((4, 1), np.uint8))
    with pytest.raises(ValueError, match="needs scale_a and scale_b"):
        bf16emu.gemm(a, b, arch="sm120", kind="mxf4", a_format="e2m1")
    with pytest.raises(ValueError, match="need kind="):
        bf16emu.gemm(a, b, arch="sm120", a_format="e2m1", scale_a=s, scale_b=s.T.copy())
    with pytest.raises(TypeError, match="uint8"):
        bf16emu.gemm(a, b, arch="sm120", kind="mxf4", a_format="e2m1", scale_a=s.astype(np.int16), scale_b=s.T)
    with pytest.raises(ValueError, match="no scaled preset"):
        bf16emu.gemm(a, b, arch="sm90", kind="mxf4", a_format="e2m1", scale_a=s, scale_b=s.T.copy())
