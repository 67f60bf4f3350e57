"""Bit patterns in and out: arrays and tensors to the core's bits, results back as the caller's
kind of array (out=, return_flags=)."""

from __future__ import annotations

import warnings

import numpy as np

from . import _core
from ._formats import _PATTERN_WIDTH, _WIDTH  # noqa: F401 (read by _arith, _gemm, _compare)
from ._args import Flags, _bool, _caller_level, _cpu_tensor, _format_name, _is_tensor, _torch


_NUMPY_FORMATS = {np.dtype(np.float32): "fp32", np.dtype(np.float64): "fp64", np.dtype(np.float16): "fp16"}
_BITS_DTYPE = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}
# Storage widths, pattern widths and NaN encodings: the C++ core's facts (_formats.py).
_BYTE_FORMATS = "e4m3, e5m2, e2m3, e3m2 or e2m1"


def _check_pattern(bits: np.ndarray, fmt: str, arg: str) -> None:
    """The one check of bit patterns (convert's, in the compiled core): a format narrower than its
    storage (tf32, e2m3, e3m2, e2m1) has no bit set above its pattern; ValueError naming the
    argument, the element and the format."""
    if fmt in _PATTERN_WIDTH:
        _core.check_bits(bits, fmt, arg)


class _Kind:
    """How a result is handed back: a NumPy array (of bits or of a native dtype) or a tensor."""

    def __init__(self, torch_tensor: bool, native: bool):
        self.torch = torch_tensor
        self.native = native  # NumPy input had a native float dtype (float16/32/64)


def _contiguous(a: np.ndarray) -> np.ndarray:
    """a itself when C-contiguous, else a C-contiguous copy (0-d arrays stay 0-d)."""
    return a if a.flags.c_contiguous else a.copy(order="C")


def _torch_float_formats(torch) -> dict:
    """torch float dtypes -> the format they hold (the float8 dtypes where this torch has them)."""
    table = {torch.bfloat16: "bf16", torch.float16: "fp16", torch.float32: "fp32", torch.float64: "fp64"}
    for attr, name in (("float8_e4m3fn", "e4m3"), ("float8_e5m2", "e5m2")):
        if hasattr(torch, attr):
            table[getattr(torch, attr)] = name
    return table


def _torch_bit_dtypes(torch) -> dict:
    """torch integer dtypes that carry bit patterns with format= -> storage width in bits."""
    table = {torch.uint8: 8, torch.int8: 8, torch.int16: 16, torch.int32: 32, torch.int64: 64}
    for attr, width in (("uint16", 16), ("uint32", 32), ("uint64", 64)):
        if hasattr(torch, attr):
            table[getattr(torch, attr)] = width
    return table


def _warn_detached(x, arg: str) -> None:
    if getattr(x, "requires_grad", False):
        warnings.warn(f"bf16emu: argument '{arg}' requires grad; bf16emu's element-wise functions are not "
                      f"differentiable and their result is detached from the graph (bf16emu.torch has the "
                      f"autograd ops: attention, linear, matmul; call .detach() to silence this)",
                      UserWarning, stacklevel=_caller_level())


def _tensor_bits(x, arg: str, fmt, fmt_arg: str = "format"):
    torch = _torch()
    floats, ints = _torch_float_formats(torch), _torch_bit_dtypes(torch)
    _warn_detached(x, arg)
    if x.dtype in floats:
        have = floats[x.dtype]
        if fmt is not None and _format_name(fmt, fmt_arg) != have:
            raise TypeError(f"argument '{arg}': a {x.dtype} tensor holds {have}, not {fmt_arg} '{fmt}'")
    elif x.dtype in ints:
        if fmt is None:
            raise TypeError(f"argument '{arg}': a {x.dtype} tensor holds bit patterns; say which format with "
                            f"{fmt_arg}= (uint8: {_BYTE_FORMATS}; int16: bf16 or fp16; int32: tf32 or fp32)")
        have = _format_name(fmt, fmt_arg)
        if _WIDTH[have] != ints[x.dtype]:
            raise TypeError(f"argument '{arg}': {x.dtype} elements do not hold {fmt_arg} {have} "
                            f"({_WIDTH[have]}-bit storage: {_TORCH_BITS_NAME[_WIDTH[have]]})")
    else:
        raise TypeError(f"argument '{arg}': tensor dtype {x.dtype} is not supported (torch.bfloat16, "
                        f"torch.float16, torch.float32, torch.float64, or uint8/int16/int32 bit patterns "
                        f"with format=)")
    _cpu_tensor(x, arg)
    x = x.detach().contiguous()
    width = _WIDTH[have]
    if width == 8:
        bits = x.view(torch.uint8).numpy()
    else:
        bits = x.view({16: torch.int16, 32: torch.int32, 64: torch.int64}[width]).numpy().view(_BITS_DTYPE[width])
    return bits, have


_TORCH_BITS_NAME = {8: "torch.uint8", 16: "torch.int16", 32: "torch.int32", 64: "torch.int64"}


def _numpy_bits(x, arg: str, fmt, fmt_arg: str = "format"):
    a = np.asarray(x)
    if not a.dtype.isnative:  # '>u2', '>f4': the values in this machine's byte order
        a = a.astype(a.dtype.newbyteorder("="))
    dt = a.dtype
    if dt in _NUMPY_FORMATS:
        have = _NUMPY_FORMATS[dt]
        if fmt is not None and _format_name(fmt, fmt_arg) != have:
            raise TypeError(f"argument '{arg}': a {dt} array holds {have}, not {fmt_arg} '{fmt}' "
                            f"(pass bit patterns as uint{_WIDTH[_format_name(fmt, fmt_arg)]})")
        a = _contiguous(a)
        return a.view(_BITS_DTYPE[_WIDTH[have]]), have, True
    if dt.kind == "u" and dt.itemsize in (1, 2, 4, 8):
        if fmt is None:
            raise TypeError(f"argument '{arg}': a {dt} array holds bit patterns; say which format with {fmt_arg}= "
                            f"({ {1: _BYTE_FORMATS, 2: 'bf16 or fp16', 4: 'tf32 or fp32', 8: 'fp64'}[dt.itemsize]})")
        name = _format_name(fmt, fmt_arg)
        if _WIDTH[name] != dt.itemsize * 8:
            raise TypeError(f"argument '{arg}': {dt} elements do not hold {fmt_arg} {name} "
                            f"({_WIDTH[name]}-bit storage: uint{_WIDTH[name]})")
        return _contiguous(a), name, False
    raise TypeError(f"argument '{arg}': dtype {dt} is not supported (float32, float16, float64, uint16 bit "
                    f"patterns of bf16/fp16, uint32 of tf32, uint8 of e4m3/e5m2/e2m3/e3m2/e2m1)")


def to_bits(x, format=None, arg: str = "x", format_arg: str = "format"):
    """(bits, format, kind): the contiguous bit patterns of an array or tensor, its format name
    and how to hand a result of that kind back (used by every function of the package).

    >>> bits, fmt, _ = bf16emu.to_bits(np.float32([1.0]))
    >>> hex(int(bits[0])), fmt
    ('0x3f800000', 'fp32')
    """
    if _is_tensor(x):
        bits, name = _tensor_bits(x, arg, format, format_arg)
        _check_pattern(bits, name, arg)
        return bits, name, _Kind(True, False)
    if isinstance(x, (str, bytes)) or x is None:
        raise TypeError(f"argument '{arg}' must be an array or tensor, got {type(x).__name__}")
    bits, name, native = _numpy_bits(x, arg, format, format_arg)
    _check_pattern(bits, name, arg)
    return bits, name, _Kind(False, native)


def from_bits(bits: np.ndarray, format: str, kind: _Kind | None = None):
    """Wrap bit patterns of `format` as the caller's kind of array: torch tensors (bfloat16,
    float16, float32, float64; the other formats as uint8 (8-bit storage) or int32 (tf32) bit
    patterns), NumPy float32/float64 (and float16 for native inputs), otherwise the bits.

    >>> bf16emu.from_bits(np.array([0x3F800000], np.uint32), "fp32")
    array([1.], dtype=float32)
    """
    name = _format_name(format, "format")
    if kind is not None and kind.torch:
        torch = _torch()
        table = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32, "fp64": torch.float64}
        ints = {16: np.int16, 32: np.int32, 64: np.int64}
        if name in table:
            return torch.from_numpy(bits.view(ints[_WIDTH[name]])).view(table[name])
        if _WIDTH[name] == 8:
            return torch.from_numpy(bits.view(np.uint8))
        return torch.from_numpy(bits.view(ints[_WIDTH[name]]))  # tf32: int32 bit patterns
    native = {"fp32": np.float32, "fp64": np.float64}
    if name in native:
        return bits.view(native[name])
    if name == "fp16" and kind is not None and kind.native:
        return bits.view(np.float16)
    return bits


def _out_bits(out, fmt: str, shape: tuple):
    """The bit view of out= (written in place) and whether it is a view (False: the result is
    computed apart and copied in). out must be an array/tensor of the result's shape whose dtype
    holds `fmt` (the result's own dtype, or the storage uint / torch bit dtype with that width)."""
    if _is_tensor(out):
        torch = _torch()
        floats, ints = _torch_float_formats(torch), _torch_bit_dtypes(torch)
        ok = floats.get(out.dtype) == fmt or (out.dtype not in floats and ints.get(out.dtype) == _WIDTH[fmt])
        if not ok:
            raise TypeError(f"argument 'out': a {out.dtype} tensor cannot hold {fmt} results")
        if tuple(out.shape) != tuple(shape):
            raise ValueError(f"argument 'out': shape {tuple(out.shape)} does not match the result {tuple(shape)}")
        if out.requires_grad:
            raise ValueError("argument 'out' requires grad; bf16emu cannot write into it")
        _cpu_tensor(out, "out")
        if not out.is_contiguous():
            return None
        view = out.view(torch.uint8 if _WIDTH[fmt] == 8 else {16: torch.int16, 32: torch.int32,
                                                              64: torch.int64}[_WIDTH[fmt]])
        return view.numpy().view(_BITS_DTYPE[_WIDTH[fmt]])
    if not isinstance(out, np.ndarray):
        raise TypeError(f"argument 'out' must be a NumPy array or a torch tensor, got {type(out).__name__}")
    dt = out.dtype
    native = dt.newbyteorder("=")  # '>f4' holds fp32 too (written through a copy)
    ok = _NUMPY_FORMATS.get(native) == fmt or (dt.kind == "u" and dt.itemsize * 8 == _WIDTH[fmt])
    if not ok:
        raise TypeError(f"argument 'out': a {dt} array cannot hold {fmt} results "
                        f"(uint{_WIDTH[fmt]} bit patterns{', or the float dtype' if fmt in ('fp16', 'fp32', 'fp64') else ''})")
    if out.shape != tuple(shape):
        raise ValueError(f"argument 'out': shape {out.shape} does not match the result {tuple(shape)}")
    if not out.flags.writeable:
        raise ValueError("argument 'out' is read-only")
    if not (out.flags.c_contiguous and dt.isnative):
        return None
    return out.view(_BITS_DTYPE[_WIDTH[fmt]])


def _copy_into(out, bits: np.ndarray, fmt: str) -> None:
    """Copies result bits into an out= that could not be written in place."""
    if _is_tensor(out):
        out.copy_(from_bits(bits, fmt, _Kind(True, False)).view(out.dtype).reshape(out.shape))
    else:
        out[...] = bits.view(out.dtype.newbyteorder("=")).reshape(out.shape)


def _run(call, inputs, shape, fmt, kind, out, return_flags, legacy_tuple):
    """Runs call(out_bits, flag_mask) -> (bits, flags OR) and hands back what the caller asked for:
    the result (out itself when given); with return_flags=True (result, mask, Flags); with
    legacy_tuple=True the 0.1 form (result, Flags).

    On an exception (a bad argument, Ctrl-C) out= is partly written: the argument checks all run
    before the first write, but an interrupted call leaves the chunks it finished written (each
    element holds its result or its old value, never anything else)."""
    return_flags, legacy_tuple = _bool(return_flags, "return_flags"), _bool(legacy_tuple, "legacy_tuple")
    if legacy_tuple:
        if return_flags:
            raise ValueError("arguments 'legacy_tuple' and 'return_flags' exclude each other")
        warnings.warn("bf16emu: legacy_tuple=True (the (result, flags) tuple) is deprecated and goes in the "
                      "next release; use return_flags=True for (result, mask, flags)",
                      DeprecationWarning, stacklevel=_caller_level())
    mask = np.zeros(shape, np.uint8) if return_flags else None
    target = None
    if out is not None:
        target = _out_bits(out, fmt, shape)
        if target is not None and any(np.may_share_memory(target, b) for b in inputs):
            target = None  # overlaps an operand: compute apart, then copy
    bits, flags = call(target, mask)
    if out is not None:
        if target is None:
            _copy_into(out, bits, fmt)
        result = out
    else:
        result = from_bits(bits, fmt, kind)
    if legacy_tuple:
        return result, Flags(flags)
    if return_flags:
        if kind.torch:
            mask = _torch().from_numpy(mask)
        return result, mask, Flags(flags)
    return result
