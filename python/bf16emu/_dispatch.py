"""Every matrix product of a PyTorch program on a tensor-core preset (issue 43 item 2).

ProductMode is a TorchDispatchMode: while it is active, aten.mm, aten.bmm, aten.addmm and
aten.baddbmm (what torch 1.13 lowers `@`, torch.matmul, torch.einsum, F.linear / nn.Linear and
their backward to) are computed by bf16emu.gemm on the preset `gpu`: both operands rounded to
`dtype` (round to nearest even, bf16emu.convert), then the tensor-core model with FP32
accumulation and output, one bf16emu.gemm per 2-d slice. addmm/baddbmm's bias is added after
the product in FP32 by the host, as cuBLASLt's bias epilogue does:
out = alpha * P + beta * bias (alpha == 1: P itself; beta == 0: the bias is not read, as
PyTorch defines). Everything else (softmax, layer norm, elementwise ops, reductions) runs in
the host's own arithmetic; the floating-point ops among them are listed in report() and warned
about once per op.
"""

from __future__ import annotations

import time
import warnings

import numpy as np
import torch
from torch.utils._python_dispatch import TorchDispatchMode

import bf16emu as _bf

from . import _fp8, _implicit_gemm

__all__ = ["ProductMode", "emulate_products"]

DTYPES = _fp8.DTYPES  # bf16 fp16 tf32 e4m3 e5m2 (fp8: scale rule in _fp8)
_aten = torch.ops.aten
_EMULATED = {_aten.mm.default: "mm", _aten.bmm.default: "bmm", _aten.addmm.default: "addmm",
             _aten.baddbmm.default: "baddbmm"}
# Ops that move or describe data without arithmetic: not reported.
_MOVES = frozenset("""view _unsafe_view t transpose permute expand clone detach reshape _reshape_alias unsqueeze
squeeze select slice as_strided contiguous copy_ _to_copy empty_like new_empty new_zeros new_ones zeros_like
ones_like fill_ zero_ alias split split_with_sizes unbind is_same_size lift_fresh empty zeros ones full
new_empty_strided empty_strided stack cat repeat expand_as view_as to _local_scalar_dense""".split())


def _check(gpu, dtype):
    _fp8.check(gpu, dtype)  # ValueError naming 'dtype' or 'gpu'


def _slice_product(a, b, gpu, dtype):
    """a (M x K) @ b (K x N) on the preset: FP32 torch tensor (M x N)."""
    M, K = a.shape
    N = b.shape[1]
    if M == 0 or N == 0 or K == 0:
        return torch.zeros((M, N), dtype=torch.float32)
    an = a.detach().to(torch.float32).contiguous().numpy()
    bn = b.detach().to(torch.float32).contiguous().numpy()
    if dtype in _fp8.FP8:
        return torch.from_numpy(_fp8.product(an, bn, gpu, dtype))
    ab = np.asarray(_bf.convert(an, to=dtype))
    bb = np.asarray(_bf.convert(bn, to=dtype))
    d = _bf.gemm(ab, bb, arch=gpu, a_format=dtype, threads=0)
    return torch.from_numpy(np.asarray(d, dtype=np.float32).copy())


class ProductMode(TorchDispatchMode):
    """The dispatch mode itself; emulate_products() makes and enters one."""

    def __init__(self, gpu: str = "sm90", dtype: str = "bf16"):
        super().__init__()
        _check(gpu, dtype)
        self.gpu, self.dtype = gpu, dtype
        self.stats = {}  # op -> [calls, MACs, seconds]
        self.not_emulated = {}  # op name -> calls

    def _product(self, a, b):
        if a.dim() == 2:
            return _slice_product(a, b, self.gpu, self.dtype)
        if self.dtype in _fp8.FP8:  # one fp8 scale per tensor, over the whole batch
            return _fp8.batched(a, b, self.gpu, self.dtype)
        out = [_slice_product(a[i], b[i], self.gpu, self.dtype) for i in range(a.shape[0])]
        if not out:
            return torch.zeros((0, a.shape[1], b.shape[2]), dtype=torch.float32)
        return torch.stack(out)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in _implicit_gemm.OPS:  # convolutions: implicit GEMM (_implicit_gemm)
            return _implicit_gemm.dispatch(self, func, args, kwargs)
        name = _EMULATED.get(func)
        tensors = [x for x in args if isinstance(x, torch.Tensor)]
        if name is None or not all(x.is_floating_point() for x in tensors):
            op = func.overloadpacket.__name__
            if op not in _MOVES and any(x.is_floating_point() for x in tensors):
                if op not in self.not_emulated:
                    warnings.warn(f"bf16emu.torch.emulate_products: aten.{op} is not emulated (runs in the "
                                  f"host's arithmetic)", stacklevel=2)
                self.not_emulated[op] = self.not_emulated.get(op, 0) + 1
            return func(*args, **kwargs)
        t0 = time.perf_counter()
        if name in ("mm", "bmm"):
            a, b = args[0], args[1]
            bias, beta, alpha = None, 1, 1
        else:
            bias, a, b = args[0], args[1], args[2]
            beta, alpha = kwargs.get("beta", 1), kwargs.get("alpha", 1)
        p = self._product(a, b)
        if alpha != 1:
            p = p * alpha
        if bias is not None and beta != 0:
            p = p + (bias.to(torch.float32) if beta == 1 else beta * bias.to(torch.float32))
        out = p.to(torch.result_type(a, b))
        s = self.stats.setdefault(name, [0, 0, 0.0])
        s[0] += 1
        s[1] += int(a.numel()) * int(b.shape[-1])
        s[2] += time.perf_counter() - t0
        return out

    def report_dict(self) -> dict:
        return {"gpu": self.gpu, "dtype": self.dtype,
                "emulated": {k: {"calls": v[0], "macs": v[1], "seconds": v[2]} for k, v in self.stats.items()},
                "not_emulated": dict(self.not_emulated)}

    def report(self) -> str:
        lines = [f"products on {self.gpu}, operands {self.dtype}, FP32 accumulation and output"]
        for k, v in sorted(self.stats.items()):
            rate = v[1] / v[2] / 1e6 if v[2] > 0 else 0.0
            lines.append(f"  aten.{k:8s} {v[0]:6d} calls {v[1]:14d} MACs {v[2]:9.3f} s ({rate:.1f} M MAC/s)")
        if self.not_emulated:
            lines.append("not emulated (host arithmetic): " +
                         ", ".join(f"aten.{k} x{n}" for k, n in sorted(self.not_emulated.items())))
        return "\n".join(lines)


class _Products:
    """What emulate_products() returns: a `with` block runs the products on the preset."""

    def __init__(self, gpu, dtype, model):
        if model is not None and not isinstance(model, torch.nn.Module):
            raise TypeError(f"argument 'model' must be a torch.nn.Module or None, got {type(model).__name__}")
        self.mode, self.model, self._entered, self._exited = ProductMode(gpu, dtype), model, False, False

    def __enter__(self):
        if self._entered:
            raise RuntimeError("this emulate_products() handle was already entered; make another")
        if self.model is not None:
            if getattr(self.model, "_bf16emu_products", False):
                raise RuntimeError("argument 'model': emulate_products() is already active on this model")
            self.model._bf16emu_products = True
        self._entered = True
        self.mode.__enter__()
        return self

    def __exit__(self, *exc):
        self._exited = True
        self.mode.__exit__(*exc)
        if self.model is not None:
            self.model._bf16emu_products = False
        return False

    def report(self) -> str:
        return self.mode.report()

    def report_dict(self) -> dict:
        return self.mode.report_dict()


def emulate_products(gpu: str = "sm90", dtype: str = "bf16", model=None) -> _Products:
    """Context manager: every mm/bmm/addmm/baddbmm (so @, matmul, einsum, linear and their
    backward) inside the `with` block runs on tensor-core preset `gpu` with operands rounded to
    `dtype` (bf16, fp16, tf32; e4m3/e5m2 scaled, _fp8); convolutions as implicit GEMMs
    (_implicit_gemm); .report() / .report_dict() give calls, MACs and seconds per op and
    the floating-point ops left to the host. model= marks that model so a second nested
    emulate_products() on it is refused.

    >>> with et.emulate_products(gpu="sm90", dtype="bf16") as e:
    ...     y = torch.ones(2, 3) @ torch.ones(3, 4)
    >>> e.report_dict()["emulated"]["mm"]["calls"]
    1
    """
    return _Products(gpu, dtype, model)
