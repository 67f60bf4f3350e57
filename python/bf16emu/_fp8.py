"""One 2-d product on a tensor-core preset, for every operand dtype of bf16emu.torch's
ProductMode, with the scale rule of the fp8 operands (issue 43 item 1, docs/torch-convolution.md).

bf16, fp16, tf32: both operands rounded to the dtype (round to nearest even), then bf16emu.gemm
with FP32 accumulation and output.

e4m3, e5m2 (scaled per tensor, as a per-tensor-scaled FP8 GEMM does):
  amax = max |x| over the whole tensor the operand comes from (FP32): the matrix of mm/addmm, the
         whole batch of bmm/baddbmm (every slice gets the same scale), the whole weight, input or
         grad_output of a convolution (every group gets the same scale);
  scale = 2^e with e = floor(log2(fmt_max / amax)), the largest power of two with
          amax * scale <= fmt_max (fmt_max 448 for e4m3, 57344 for e5m2); scale = 1 when amax
          is 0 or not finite;
  the operand is multiplied by scale in FP32 (exact: a power of two) and rounded to the format
  by bf16emu.convert(..., saturate=True) (round to nearest even, finite values beyond fmt_max
  saturate to +-fmt_max);
  D = A_q @ B_q on the preset's fp8 path (both operands in the same format), FP32 output;
  the result is D * 2^-(e_a + e_b) in FP32 (np.ldexp: exact unless it over/underflows).
The fp8 product runs on the preset's default instruction kind (sm89, sm90, sm120: mma / wgmma)
or, where that takes no fp8 (sm100's tcgen05 default), on tcgen05 kind::f8f6f4, the kind that
takes fp8 operands on sm100. Presets with neither (sm70, sm75, sm80, sm86) are refused naming
argument 'gpu', with the list of those that take the format.
"""

from __future__ import annotations

import math

import numpy as np
import torch

import bf16emu as _bf

__all__ = ["FP8", "FMT_MAX", "DTYPES", "check", "scale_exponent", "exponents", "batched", "product"]

FP8 = ("e4m3", "e5m2")
DTYPES = ("bf16", "fp16", "tf32") + FP8
FMT_MAX = {"e4m3": 448.0, "e5m2": 57344.0}
_ARCHS = ("sm70", "sm75", "sm80", "sm86", "sm89", "sm90", "sm100", "sm120")
_fp8_archs = {}
_kinds = {}


def _takes(gpu, dtype, kind=None):
    one = np.asarray(_bf.convert(np.ones((1, 1), np.float32), to=dtype))
    try:
        _bf.gemm(one, one, arch=gpu, a_format=dtype, threads=1, **({"kind": kind} if kind else {}))
        return None
    except ValueError as e:
        return str(e)


def _kind(gpu, dtype):
    """The instruction kind for fp8 operands: the preset's default, else tcgen05's kind::f8f6f4
    (sm100, whose default tcgen05 kind takes no fp8); None for the default."""
    key = (gpu, dtype)
    if key not in _kinds:
        _kinds[key] = None if _takes(gpu, dtype) is None else "f8f6f4"
    return _kinds[key]


def check(gpu, dtype):
    """ValueError naming 'dtype' or 'gpu' unless `gpu` multiplies `dtype` operands."""
    if not isinstance(dtype, str) or dtype not in DTYPES:
        raise ValueError(f"argument 'dtype': {dtype!r:.80} is not one of {', '.join(DTYPES)}")
    if not isinstance(gpu, str):
        raise TypeError(f"argument 'gpu' must be a preset name such as 'sm90', got {type(gpu).__name__}")
    err = _takes(gpu, dtype)
    if err is None:
        return
    if dtype in FP8:
        if "unknown architecture" not in err and _takes(gpu, dtype, "f8f6f4") is None:
            return
        if dtype not in _fp8_archs:
            _fp8_archs[dtype] = [a for a in _ARCHS if _takes(a, dtype) is None or _takes(a, dtype, "f8f6f4") is None]
        raise ValueError(f"argument 'gpu': preset '{gpu:.80}' has no {dtype} operand path; these take dtype "
                         f"{dtype}: {', '.join(_fp8_archs[dtype])}")
    raise ValueError(f"argument 'gpu': no tensor-core preset '{gpu:.80}' for dtype {dtype} ({err})")


def scale_exponent(x, dtype):
    """e of the operand's scale 2^e (see the module docstring)."""
    amax = float(np.max(np.abs(x))) if x.size else 0.0
    if amax == 0.0 or not math.isfinite(amax):
        return 0
    m, e = math.frexp(FMT_MAX[dtype] / amax)  # v = m * 2^e, m in [0.5, 1): floor(log2 v) = e - 1
    return e - 1


def exponents(dtype, ta, tb):
    """(e_a, e_b) of the scales of whole tensors ta, tb (torch or NumPy) for an fp8 dtype;
    (None, None) for the other dtypes (product() then takes nothing from them)."""
    if dtype not in FP8:
        return None, None
    f = [t.detach().float().numpy() if hasattr(t, "detach") else np.asarray(t) for t in (ta, tb)]
    return scale_exponent(f[0], dtype), scale_exponent(f[1], dtype)


def batched(a, b, gpu, dtype):
    """bmm of torch tensors a (B x M x K), b (B x K x N) with fp8 operands: one scale per tensor
    (from the amax of all of a, all of b), the product slice by slice; FP32 torch tensor."""
    ea, eb = exponents(dtype, a, b)
    an, bn = a.detach().to(torch.float32).numpy(), b.detach().to(torch.float32).numpy()
    out = np.zeros((a.shape[0], a.shape[1], b.shape[2]), np.float32)
    for i in range(a.shape[0]):
        out[i] = product(an[i], bn[i], gpu, dtype, ea, eb)
    return torch.from_numpy(out)


def product(a, b, gpu, dtype, ea=None, eb=None):
    """a (M x K) @ b (K x N), FP32 NumPy arrays in, FP32 NumPy array (M x N) out, on the preset.
    fp8: ea / eb are the operands' scale exponents (None: from this a / b's own amax)."""
    M, K = a.shape
    N = b.shape[1]
    if M == 0 or N == 0 or K == 0:
        return np.zeros((M, N), np.float32)
    a = np.ascontiguousarray(a, dtype=np.float32)
    b = np.ascontiguousarray(b, dtype=np.float32)
    threads = torch.get_num_threads()  # as the mode's other products (the bits do not depend on it)
    if dtype not in FP8:
        d = _bf.gemm(np.asarray(_bf.convert(a, to=dtype, threads=threads)),
                     np.asarray(_bf.convert(b, to=dtype, threads=threads)), arch=gpu, a_format=dtype, threads=threads)
        return np.asarray(d, dtype=np.float32)
    ea = scale_exponent(a, dtype) if ea is None else ea
    eb = scale_exponent(b, dtype) if eb is None else eb
    aq = np.asarray(_bf.convert(np.ldexp(a, ea).astype(np.float32), to=dtype, saturate=True, threads=threads))
    bq = np.asarray(_bf.convert(np.ldexp(b, eb).astype(np.float32), to=dtype, saturate=True, threads=threads))
    kind = _kind(gpu, dtype)
    d = np.asarray(_bf.gemm(aq, bq, arch=gpu, a_format=dtype, threads=threads, **({"kind": kind} if kind else {})),
                   dtype=np.float32)
    return np.ldexp(d, -(ea + eb)).astype(np.float32)
