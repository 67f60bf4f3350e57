"""Every matrix product of a PyTorch program on a tensor-core preset (issue 43 item 2).

ProductMode is a TorchDispatchMode: while it is active, aten.mm, aten.bmm, aten.addmm and
aten.baddbmm (what torch 1.13 lowers `@`, torch.matmul, torch.einsum, F.linear / nn.Linear and
their backward to) are computed by bf16emu.gemm on the preset `gpu`: both operands rounded to
`dtype` (round to nearest even, bf16emu.convert), then the tensor-core model with FP32
accumulation and output, one bf16emu.gemm per 2-d slice. addmm/baddbmm's bias is added after
the product in FP32 by the host, as cuBLASLt's bias epilogue does:
out = alpha * P + beta * bias (alpha == 1: P itself; beta == 0: the bias is not read, as
PyTorch defines). With autocast (the default for bf16/fp16) the products' outputs are rounded
once to the low dtype and the other ops follow torch.autocast's CUDA lists (bf16emu._autocast,
docs/torch-autocast.md); without it everything else runs in the host's own arithmetic. Floating
ops left to the host are listed in report() and warned about once per op.
"""

from __future__ import annotations

import time
import warnings

import numpy as np
import torch
from torch.utils._python_dispatch import TorchDispatchMode

import bf16emu as _bf
import bf16emu._autocast as _ac
from bf16emu._report import Report as _Report, difference as _difference

from . import _core, _fp8, _implicit_gemm

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


def _bits(x, dtype):
    """x rounded to dtype once (round to nearest even): a C-contiguous NumPy array of bit patterns;
    a tensor already of that dtype gives its own bits (NaN payloads too). Converted on one thread
    below 2^20 elements: 2^16 elements (convert's chunk) take tens of microseconds, less than a
    second thread costs to start and schedule beside torch's own (docs/performance.md, "Two
    threads"); the bits do not depend on it."""
    if x.dtype == _ac.LOW.get(dtype):  # already in dtype (autocast's casts): its bits as they are
        return x.detach().contiguous().view(torch.int16).numpy().view(np.uint16)
    threads = torch.get_num_threads() if x.numel() >= 1 << 20 else 1
    return np.asarray(_bf.convert(x.detach().to(torch.float32).contiguous().numpy(), to=dtype, threads=threads))


def _gemm_bits(ab, bb, gpu, dtype):
    """ab (batch x M x K) @ bb (batch x K x N), both bit patterns of dtype, on the preset, with
    torch's thread count, in one call of the kernel (the chunks of every product share the
    workers): FP32 torch tensor (batch x M x N), sharing the result's memory (no copy)."""
    d = _core.gemm_batch(ab, bb, dtype, gpu, torch.get_num_threads())
    return torch.from_numpy(d.view(np.float32))


def _slice_product(a, b, gpu, dtype):
    """a (M x K) @ b (K x N) on the preset: FP32 torch tensor (M x N)."""
    if dtype in _fp8.FP8:  # _fp8.product scales, rounds and handles empty products
        an = a.detach().to(torch.float32).contiguous().numpy()
        bn = b.detach().to(torch.float32).contiguous().numpy()
        return torch.from_numpy(_fp8.product(an, bn, gpu, dtype))
    return _gemm_bits(_bits(a, dtype)[None], _bits(b, dtype)[None], gpu, dtype)[0]


def _check_autocast(autocast, dtype):
    if autocast is None:
        return dtype in _ac.LOW
    if not isinstance(autocast, bool):
        raise TypeError(f"argument 'autocast' must be None, True or False, got {type(autocast).__name__}")
    if autocast and dtype not in _ac.LOW:
        raise ValueError(f"argument 'autocast': True needs dtype bf16 or fp16 (torch.autocast has no {dtype} "
                         f"tensors), got dtype {dtype}")
    return autocast


class ProductMode(TorchDispatchMode):
    """The dispatch mode itself; emulate_products() makes and enters one. autocast (None: True
    for bf16/fp16, False for tf32): see bf16emu._autocast and docs/torch-autocast.md.
    overrides: {module name: None or preset}, resolved by emulate_products(model=...).
    compare: also run the host's FP32 product of each emulated call, for the report's
    differences (False: the report has calls, MACs and seconds only, and a step runs faster)."""

    def __init__(self, gpu: str = "sm90", dtype: str = "bf16", autocast=None, overrides=None, compare=True):
        super().__init__()
        _check(gpu, dtype)
        if not isinstance(compare, bool):
            raise TypeError(f"argument 'compare' must be True or False, got {type(compare).__name__}")
        self.gpu, self.dtype, self.compare = gpu, dtype, compare
        self.autocast = _check_autocast(autocast, dtype)
        self.overrides = dict(overrides or {})
        self.rep = _Report(gpu, dtype, self.autocast)
        self.modules = []  # names of the modules running (forward hooks)
        self._warned = set()

    def module(self):
        if self.modules:
            return self.modules[-1]
        return "(backward)" if _ac.in_backward() else "(outside)"

    def __enter__(self):
        self._engine = _ac.wrap_engine()
        return super().__enter__()

    def __exit__(self, *exc):
        try:
            return super().__exit__(*exc)
        finally:
            _ac.unwrap_engine(self._engine)

    def _preset(self):
        """The preset for a product now: the innermost running module with an override."""
        for name in reversed(self.modules):
            if name in self.overrides:
                return self.overrides[name]
        return self.gpu

    def _product(self, a, b, gpu):
        if a.dim() == 2:
            return _slice_product(a, b, gpu, self.dtype)
        if self.dtype in _fp8.FP8:  # one fp8 scale per tensor, over the whole batch
            return _fp8.batched(a, b, gpu, self.dtype)
        # Each operand converted once as a whole (one copy, one bf16emu.convert).
        return _gemm_bits(_bits(a, self.dtype), _bits(b, self.dtype), gpu, self.dtype)

    def _host(self, func, op, args, kwargs, reason):
        if op not in self._warned:
            self._warned.add(op)
            warnings.warn(f"bf16emu.torch.emulate_products: aten.{op} is not emulated ({reason})", stacklevel=3)
        t0 = time.perf_counter()
        out = func(*args, **kwargs)
        self.rep.host(op, reason, self.module(), time.perf_counter() - t0)
        return out

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in _implicit_gemm.OPS:  # convolutions: implicit GEMM (_implicit_gemm)
            return _implicit_gemm.dispatch(self, func, args, kwargs)
        name = _EMULATED.get(func)
        tensors = [x for x in args if isinstance(x, torch.Tensor)]
        if name is None or not all(x.is_floating_point() for x in tensors):
            op = func.overloadpacket.__name__
            ts = _ac.floating(args, kwargs)
            if op in _MOVES or not ts:
                return func(*args, **kwargs)
            cls = _ac.lookup(op) if self.autocast and "out" not in kwargs else None  # out=: host, reported
            if cls is None or cls == "lower_precision_fp (host)":
                low = any(t.dtype in _ac.LOW.values() for t in ts)
                if not self.autocast:
                    reason = "autocast off: host arithmetic"
                elif cls:
                    reason = "autocast lower-precision op without a tensor-core model here: host arithmetic"
                elif low:
                    reason = "not in bf16emu's autocast table: host arithmetic on low-precision tensors"
                else:
                    reason = "not in bf16emu's autocast table: host FP32 arithmetic (FP32 operands)"
                return self._host(func, op, args, kwargs, reason)
            t0 = time.perf_counter()
            out, how = _ac.run(cls, func, args, kwargs)
            self.rep.add(how if how in ("fp32", "rounded") else "fp32", op, self.module(),
                         time.perf_counter() - t0)
            return out
        t0 = time.perf_counter()
        if name in ("mm", "bmm"):
            a, b = args[0], args[1]
            bias, beta, alpha = None, 1, 1
        else:
            bias, a, b = args[0], args[1], args[2]
            beta, alpha = kwargs.get("beta", 1), kwargs.get("alpha", 1)
        macs = int(a.numel()) * int(b.shape[-1])
        gpu = self._preset()

        def host():  # the host's FP32 result of the same call
            return func(*[x.to(torch.float32) if isinstance(x, torch.Tensor) else x for x in args], **kwargs)

        if gpu is None:  # overrides: this module's products stay in host FP32
            out = host()
            self.rep.add("host_products", name, self.module(), time.perf_counter() - t0, macs)
            return out
        # The emulated product first: Ctrl-C interrupts it between chunks of rows, while the host's
        # own product (after it) cannot be interrupted, as in plain PyTorch.
        p = self._product(a, b, gpu)
        if alpha != 1:
            p = p * alpha
        if bias is not None and beta != 0:
            bias = bias.to(torch.float32)
            if self.autocast:  # autocast casts every input, the bias too, to the low dtype
                bias = bias.to(_ac.LOW[self.dtype]).to(torch.float32)
            p = p + (bias if beta == 1 else beta * bias)
        out = p.to(_ac.LOW[self.dtype] if self.autocast else torch.result_type(a, b))
        self.rep.add("emulated", name, self.module(), time.perf_counter() - t0, macs,
                     _difference(out, host()) if self.compare else None)
        return out

    def report_dict(self) -> dict:
        return self.rep.as_dict()

    def report(self) -> str:
        return self.rep.text()


def _check_overrides(overrides, model, dtype):
    if overrides is None:
        return {}
    if not isinstance(overrides, dict):
        raise TypeError(f"argument 'overrides' must be a dict of module name -> None or preset, "
                        f"got {type(overrides).__name__}")
    if overrides and model is None:
        raise ValueError("argument 'overrides': needs model= (module names come from model.named_modules())")
    names = dict(model.named_modules()) if model is not None else {}
    for key, val in overrides.items():
        if not isinstance(key, str) or key not in names or key == "":
            raise ValueError(f"argument 'overrides': no module named {key!r:.80} in the model")
        if val is not None:
            try:
                _check(val, dtype)
            except (TypeError, ValueError) as e:
                raise ValueError(f"argument 'overrides': module {key!r}: {e}") from None
    return dict(overrides)


class _Products:
    """What emulate_products() returns: a `with` block runs the products on the preset."""

    def __init__(self, gpu, dtype, model, autocast=None, overrides=None, compare=True):
        if model is not None and not isinstance(model, torch.nn.Module):
            raise TypeError(f"argument 'model' must be a torch.nn.Module or None, got {type(model).__name__}")
        ov = _check_overrides(overrides, model, dtype)
        self.mode = ProductMode(gpu, dtype, autocast, ov, compare)
        self.model, self._entered, self._exited = model, False, False
        self._hooks = []

    def _hook(self):
        stack = self.mode.modules
        for name, mod in self.model.named_modules():
            label = name or "(root)"
            self._hooks.append(mod.register_forward_pre_hook(lambda m, i, label=label: stack.append(label) and None))
            self._hooks.append(mod.register_forward_hook(lambda m, i, o: stack.pop() and None))

    def __enter__(self):
        if self._entered:
            raise RuntimeError("this emulate_products() handle was already entered; make another")
        if self.model is not None:
            if getattr(self.model, "_bf16emu_products", False):
                raise RuntimeError("argument 'model': emulate_products() is already active on this model")
            self.model._bf16emu_products = True
            self._hook()
        self._entered = True
        self.mode.__enter__()
        return self

    def __exit__(self, *exc):
        self._exited = True
        self.mode.__exit__(*exc)
        for h in self._hooks:
            h.remove()
        self._hooks = []
        self.mode.modules.clear()  # a forward that raised leaves its modules' names
        if self.model is not None:
            self.model._bf16emu_products = False
        return False

    def report(self) -> str:
        return self.mode.report()

    def report_dict(self) -> dict:
        return self.mode.report_dict()


def emulate_products(gpu: str = "sm90", dtype: str = "bf16", model=None, autocast=None,
                     overrides=None, compare: bool = True) -> _Products:
    """Context manager: every mm/bmm/addmm/baddbmm (so @, matmul, einsum, linear and their
    backward) inside the `with` block runs on tensor-core preset `gpu` with operands rounded to
    `dtype` (bf16, fp16, tf32; e4m3/e5m2 with one power-of-two scale per tensor, _fp8);
    convolutions (transposed too) as implicit GEMMs (_implicit_gemm, docs/torch-convolution.md).

    autocast (None: True for bf16/fp16, False for tf32; True with tf32 is refused): the rest of
    a CUDA torch.autocast step, with torch.bfloat16/float16 tensors for the low-precision ones:
    products return the low dtype (the FP32 result of the tensor-core model rounded once, RNE;
    addmm/baddbmm's bias rounded to the low dtype first, as autocast casts every input, then
    alpha * P + beta * bias in FP32 and one rounding: the cuBLASLt bias epilogue assumption);
    autocast's fp32 ops in FP32; element-wise ops computed in FP32 and rounded once to torch's
    promoted dtype; other floating ops on the host, warned once per op and reported. The table
    is bf16emu._autocast.TABLE, documented in docs/torch-autocast.md. autocast=False: products
    give FP32, everything else runs on the host.

    .report() / .report_dict() (JSON-serialisable): calls, MACs, seconds per op kind and per
    module, and for the emulated products how many outputs differ from the host FP32 result of
    the same call and the largest relative difference (bf16emu._report). model= names the
    modules (forward hooks; backward ops are filed under "(backward)") and marks the model so
    that a second nested emulate_products() on it is refused. overrides= (with model=):
    {module name: None (its products stay in host FP32) or a preset name}; it applies to the
    products of that module's forward (and its submodules'), not to the backward's products,
    which no module hook sees. compare=False skips the host's FP32 product of each emulated call
    (the report's differences), about 59 % of an emulated GPT step's time with Debian's reference
    BLAS (docs/performance.md).

    >>> with et.emulate_products(gpu="sm90", dtype="bf16") as e:
    ...     y = torch.ones(2, 3) @ torch.ones(3, 4)
    >>> e.report_dict()["emulated"]["mm"]["calls"], y.dtype
    (1, torch.bfloat16)
    """
    return _Products(gpu, dtype, model, autocast, overrides, compare)
