"""bf16emu.torch.emulate and Emulated (moved out of torch.py, issue 43): serve a model's
nn.Linear layers and scaled_dot_product_attention calls by the emulated ops, and with gpu= every
matrix product of the model's forward and backward by the preset (bf16emu._dispatch)."""

from __future__ import annotations

import torch

import bf16emu.torch as _t
from bf16emu._dispatch import emulate_products

class Emulated:
    """What emulate() returns: the model with its ops served by the emulation. Calls and
    attributes go to the model; `with` gives the model itself and restores it on exit, as
    restore() does. `ledgers`: the attention ledgers of the calls made (ledger=True)."""

    def __init__(self, model, attention, linear, collect_ledgers, products=None):
        self.model, self.attention, self.linear = model, attention, linear
        self.products = products  # emulate_products() handle (gpu=), entered by `with`
        self.collect_ledgers, self.ledgers = collect_ledgers, []
        self._patched = []
        self._entered = self._restored = False
        if linear is not None:
            for mod in model.modules():
                if isinstance(mod, torch.nn.Linear):
                    if "forward" in mod.__dict__:
                        raise ValueError(f"argument 'model': a Linear layer's forward is already replaced "
                                         f"({type(mod).__name__} at {id(mod):#x}; nested emulate?)")
                    mod.forward = self._linear_forward(mod)
                    self._patched.append(mod)
        self._sdpa = None
        self._wrapped = None  # (whether model.forward was in its __dict__, that forward)
        if attention is not None:
            # The model's forward marks this emulation as running (in this thread) while it runs.
            had = "forward" in model.__dict__
            inner = model.forward

            def forward(*args, **kwargs):
                stack = _t._running()
                stack.append(self)
                try:
                    return inner(*args, **kwargs)
                finally:
                    stack.remove(self)

            self._wrapped = (had, model.__dict__.get("forward"))
            model.forward = forward
            if _t._TORCH_SDPA is not None:
                self._sdpa = torch.nn.functional.scaled_dot_product_attention
                torch.nn.functional.scaled_dot_product_attention = _t.scaled_dot_product_attention
        _t._ACTIVE.append(self)

    def _linear_forward(self, mod):
        cfg = self.linear
        return lambda x: _t.linear(x, mod.weight, mod.bias, **cfg)

    def restore(self):
        """Puts the model back as it was (idempotent)."""
        self._restored = True
        if self.products is not None and self.products._entered and not self.products._exited:
            self.products.__exit__(None, None, None)
        if self._wrapped is not None:
            had, prev = self._wrapped
            if had:
                self.model.forward = prev
            else:
                del self.model.forward
            self._wrapped = None
        for mod in self._patched:
            del mod.forward
        self._patched = []
        if self._sdpa is not None:
            torch.nn.functional.scaled_dot_product_attention = self._sdpa
            self._sdpa = None
        if self in _t._ACTIVE:
            _t._ACTIVE.remove(self)

    def __enter__(self):
        # One `with` per handle: a second (nested or after the first ended) would run the plain
        # model once the first restores it.
        if self._entered or self._restored:
            raise RuntimeError("this emulate() handle was already entered or restored; call bf16emu.torch.emulate() "
                               "again for another `with` block")
        self._entered = True
        if self.products is not None:
            try:
                self.products.__enter__()
            except BaseException:
                self.restore()
                raise
        return self.model

    def __exit__(self, *exc):
        self.restore()
        return False

    def __call__(self, *args, **kwargs):
        if self._restored:
            raise RuntimeError("this emulate() handle was restored; call bf16emu.torch.emulate() again")
        return self.model(*args, **kwargs)

    def report(self) -> str:
        """The run's report (gpu=): per op kind and per module calls, MACs, seconds, the products'
        differences from the host FP32 result, the ops left to the host and why."""
        return self.products.report() if self.products is not None else "no products emulated (gpu=None)"

    def report_dict(self) -> dict:
        return self.products.report_dict() if self.products is not None else {}

    def __getattr__(self, name):
        return getattr(self.__dict__["model"], name)


def _config(arg, what, key, check):
    if arg is None:
        return None
    if isinstance(arg, str):
        arg = {key: arg}
    if not isinstance(arg, dict):
        raise TypeError(f"argument '{what}' must be None, a {key} name or a dict of keyword arguments, "
                        f"got {type(arg).__name__}")
    check(dict(arg))
    return dict(arg)


def emulate(model, attention=None, linear=None, *, ledger: bool = False, gpu=None, dtype: str = "bf16",
            autocast=None, overrides=None, compare: bool = True) -> Emulated:
    """Serves `model`'s nn.Linear layers by bf16emu.torch.linear (linear: a dict of its keyword
    arguments, or an arch name) and its scaled_dot_product_attention calls by
    bf16emu.torch.attention (attention: a dict of its keyword arguments, or a policy name), until
    restore() or the end of the `with` block. None leaves that op alone. ledger=True keeps each
    attention call's ledger in .ledgers ('forward': the forward ledgers only). gpu= (a preset
    name) runs every matrix product inside the `with` block, forward and backward, on that
    preset with operands rounded to dtype= (bf16emu.torch.emulate_products; not with linear=),
    with autocast= (None: on for bf16/fp16), per-module overrides= and compare= as
    emulate_products has them; .report() then gives the run's report.

    >>> model = torch.nn.Sequential(torch.nn.Linear(16, 3))
    >>> with et.emulate(model, linear={"arch": "sm90", "format": "bf16"}) as m:
    ...     y = m(torch.ones(2, 16))
    >>> y.shape
    torch.Size([2, 3])
    """
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"argument 'model' must be a torch.nn.Module, got {type(model).__name__}")
    if not isinstance(ledger, bool) and ledger != "forward":
        raise TypeError(f"argument 'ledger' must be a bool or 'forward', got {ledger!r:.80}")
    tiny = torch.zeros(1, 1, 1, 1)
    if isinstance(attention, dict):
        # Set by each call (scaled_dot_product_attention's is_causal and scale), or by emulate's
        # own ledger=: a dict holding them would clash at the first forward or change its result.
        for key, why in (("causal", "is_causal= of each scaled_dot_product_attention call"),
                         ("scale", "scale= of each scaled_dot_product_attention call"),
                         ("ledger", "emulate(..., ledger=True)")):
            if key in attention:
                raise ValueError(f"argument 'attention': key '{key}' is not an emulate() setting (it comes from "
                                 f"{why})")
    att = _config(attention, "attention", "policy", lambda c: _t._attention(tiny, tiny, tiny, **c))
    lin = _config(linear, "linear", "arch", lambda c: _t._linear(tiny[0, 0], tiny[0, 0], **c))
    if gpu is not None and linear is not None:
        raise ValueError("argument 'gpu': not with linear= (both would serve the nn.Linear layers)")
    if gpu is None and (autocast is not None or overrides is not None or compare is not True):
        raise ValueError("argument 'autocast'/'overrides'/'compare': only with gpu= (they set the products' mode)")
    products = None if gpu is None else emulate_products(gpu=gpu, dtype=dtype, model=model, autocast=autocast,
                                                         overrides=overrides, compare=compare)
    return Emulated(model, att, lin, ledger, products)
