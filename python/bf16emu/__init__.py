"""bf16emu: bit-exact BF16/FP16/TF32/FP8/FP6/FP4/FP32 soft-float, tensor-core model and attention ledger.

Arrays in and out (docs/python.md):
  NumPy   float32 -> fp32, float64 -> fp64 (conversion source only), float16 -> fp16, and bit
          patterns with format=: uint8 -> e4m3, e5m2 or the OCP MX formats e2m3, e3m2 (fp6) and
          e2m1 (fp4), one element per byte, upper bits 0; uint16 -> bf16 or fp16; uint32 -> tf32
          (a 19-bit pattern) or fp32.
  PyTorch torch.bfloat16, torch.float16, torch.float32, torch.float64 (CPU), and bit patterns
          with format=: torch.uint8 (8-bit formats), torch.int16 (bf16, fp16), torch.int32 (tf32,
          fp32). Results come back as tensors.
Any shape; the operands of add/sub/mul/div/fma broadcast like NumPy's.

Every element-wise function returns a plain array or tensor of its input's kind, so
np.asarray(bf16emu.convert(x, to="bf16")) is the bf16 bit patterns; out= writes into a given
array. return_flags=True returns (result, mask, flags): the IEEE flags of each element (uint8,
Flags bits) and their OR. legacy_tuple=True gives the 0.1 form (result, flags), deprecated.
"""

from __future__ import annotations

import enum
import math
import numbers
import os
import sys
import warnings

import numpy as np

from . import _core

__all__ = [
    "Flags", "convert", "add", "sub", "mul", "div", "fma", "sqrt", "trace", "to_bits", "from_bits",
    "compare", "Comparison", "mma", "gemm", "attention", "attention_backward", "quantize_mx", "dequantize_mx",
    "finfo", "FormatInfo", "__version__", "explain_gemm", "GemmExplanation",
]

__version__: str = _core.__version__

ROUNDING_DEFAULT = "nearest_even"


class Flags(enum.IntFlag):
    """IEEE exception flags (the core's bit values).

    >>> bf16emu.Flags(20)
    <Flags.OVERFLOW|INEXACT: 20>
    """
    NONE = 0
    INVALID = 1
    DIVBYZERO = 2
    OVERFLOW = 4
    UNDERFLOW = 8
    INEXACT = 16


_NUMPY_FORMATS = {np.dtype(np.float32): "fp32", np.dtype(np.float64): "fp64", np.dtype(np.float16): "fp16"}
_BITS_DTYPE = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}
# Storage widths, pattern widths, NaN encodings and finfo: from the C++ core (_formats.py).
from ._formats import _NAN_ABOVE, _PATTERN_WIDTH, _WIDTH, FormatInfo, finfo  # noqa: E402
_BYTE_FORMATS = "e4m3, e5m2, e2m3, e3m2 or e2m1"


def _torch():
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is optional
        return None
    return torch


def _is_tensor(x) -> bool:
    # A tensor exists only once torch is imported: a NumPy-only call never imports torch (1-2 s).
    t = sys.modules.get("torch")
    return t is not None and isinstance(x, t.Tensor)


def _name(val, arg: str) -> str:
    """A name argument (rounding, arch, policy, ...) spelled as the CLI reads it: a str, with
    surrounding spaces dropped and in lower case (_core.normalize_name: src/io's one rule)."""
    if not isinstance(val, str):
        raise TypeError(f"argument '{arg}' must be a name (str), got {type(val).__name__}")
    return _core.normalize_name(val)


def _bool(val, arg: str) -> bool:
    if not isinstance(val, (bool, np.bool_)):
        raise TypeError(f"argument '{arg}' must be a bool, got {type(val).__name__}")
    return bool(val)


INT_MAX = 2**31 - 1


def _int(val, arg: str, low: int, high: int) -> int:
    """An integer argument in [low, high]: TypeError for a bool or a non-integer, ValueError
    outside the range (never a pybind11 cast error)."""
    if isinstance(val, (bool, np.bool_)) or not isinstance(val, numbers.Integral):
        raise TypeError(f"argument '{arg}' must be an integer, got {type(val).__name__}")
    if not low <= int(val) <= high:
        raise ValueError(f"argument '{arg}' = {int(val)} is outside [{low}, {high}]")
    return int(val)


def _check_pattern(bits: np.ndarray, fmt: str, arg: str) -> None:
    """The one check of bit patterns (convert's, in the compiled core): a format narrower than its
    storage (tf32, e2m3, e3m2, e2m1) has no bit set above its pattern; ValueError naming the
    argument, the element and the format."""
    if fmt in _PATTERN_WIDTH:
        _core.check_bits(bits, fmt, arg)


def _cpu_tensor(x, arg: str):
    """A tensor's data on the CPU: meta tensors (no data) and tensors on another device are refused."""
    if x.device.type != "cpu":
        raise ValueError(f"argument '{arg}' is on device '{x.device}'; bf16emu reads tensors on the CPU "
                         f"(move it with .cpu()){' (a meta tensor has no data)' if x.device.type == 'meta' else ''}")
    return x


def _format_name(fmt, arg: str) -> str:
    """The canonical name of a format name or alias, read by the CLI's own table (src/io)."""
    if not isinstance(fmt, str):
        raise TypeError(f"argument '{arg}' must be a format name (str), got {type(fmt).__name__}")
    try:
        return _core.format_name(fmt)
    except ValueError as err:
        raise ValueError(f"argument '{arg}': {err}") from None


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


def _caller_level() -> int:
    """The warnings stacklevel of the first frame outside this package (the user's call)."""
    level, frame = 2, sys._getframe(2)
    while frame is not None and frame.f_globals.get("__name__", "").split(".")[0] == "bf16emu":
        frame, level = frame.f_back, level + 1
    return level


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


def _seed(seed) -> int:
    if seed is None:
        return 0
    if isinstance(seed, (bool, np.bool_)):
        raise TypeError(f"argument 'seed' must be an integer, got {type(seed).__name__}")
    if not isinstance(seed, numbers.Integral):
        if isinstance(seed, numbers.Real) and math.isnan(float(seed)):
            raise ValueError("argument 'seed' is NaN (an integer in [0, 2^64) is needed)")
        if isinstance(seed, numbers.Real) and float(seed).is_integer():
            seed = int(seed)
        else:
            raise TypeError(f"argument 'seed' must be an integer, got {seed!r:.80}")
    seed = int(seed)
    if seed < 0 or seed >= 1 << 64:
        raise ValueError(f"argument 'seed' = {seed} is outside [0, 2^64)")
    return seed


MAX_THREADS = 1024


def _threads(threads) -> int:
    """threads as the C++ side takes it: 0 (every core) to MAX_THREADS, else ValueError/TypeError."""
    if isinstance(threads, bool) or not isinstance(threads, numbers.Integral):
        raise TypeError(f"argument 'threads' must be an integer, got {type(threads).__name__}")
    if threads < 0 or threads > MAX_THREADS:
        raise ValueError(f"argument 'threads' must be in 0..{MAX_THREADS} (0: every core), got {threads!r:.80}")
    return int(threads)


def _options(rounding, tininess, nan, ftz, daz, saturate, seed, threads) -> dict:
    names = {arg: _name(v, arg) for arg, v in (("rounding", rounding), ("tininess", tininess), ("nan", nan))}
    for name, v in (("ftz", ftz), ("daz", daz), ("saturate", saturate)):
        _bool(v, name)
    _threads(threads)
    opts = dict(names, ftz=bool(ftz), daz=bool(daz), saturate=bool(saturate), seed=_seed(seed),
                threads=int(threads))
    _core.check_env(opts)  # unknown names fail here, before any work, as the CLI's parsers say
    return opts


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


def convert(x, to: str, *, format: str | None = None, rounding: str = ROUNDING_DEFAULT, tininess: str = "after",
            nan: str = "ieee", ftz: bool = False, daz: bool = False, saturate: bool = False, seed=None,
            threads: int = 0, out=None, return_flags: bool = False, legacy_tuple: bool = False):
    """Round every element of x into format `to`; returns the result as x's kind of array.

    x: NumPy float16/32/64, uint bit patterns with format= (uint8: e4m3, e5m2, e2m3, e3m2, e2m1;
    uint16: bf16, fp16; uint32: tf32, fp32), or a torch tensor (bfloat16, float16, float32,
    float64, or uint8/int16/int32 bit patterns with format=). The result: NumPy float32/float64
    for fp32/fp64 (float16 for fp16 from a float input), uint bit patterns for the others; for a
    tensor, torch.bfloat16/float16/float32/float64, or torch.uint8 (8-bit formats) / torch.int32
    (tf32) bit patterns. out= writes into that array/tensor and returns it. return_flags=True
    returns (result, mask, flags): mask is uint8 of the result's shape with each element's IEEE
    flags (Flags bits), flags their OR. legacy_tuple=True returns the old (result, flags) and is
    deprecated. Stochastic rounding draws element i's random bits from (seed, i): the same seed
    gives the same bits on any thread count.

    >>> np.asarray(bf16emu.convert(np.float32([1/3, 1.0]), to="bf16"))
    array([16043, 16256], dtype=uint16)
    """
    bits, src, kind = to_bits(x, format, "x")
    dst = _format_name(to, "to")
    opts = _options(rounding, tininess, nan, ftz, daz, saturate, seed, threads)
    return _run(lambda o, m: _core.convert(bits, src, dst, opts, o, m), [bits], bits.shape, dst, kind, out,
                return_flags, legacy_tuple)


def _arith(op, operands, format, rounding, tininess, nan, ftz, daz, saturate, seed, threads, out=None,
           return_flags=False, legacy_tuple=False):
    names = "abc"
    bits, fmts, kinds = [], [], []
    for i, x in enumerate(operands):
        b, f, k = to_bits(x, format, names[i])
        bits.append(b)
        fmts.append(f)
        kinds.append(k)
    for i in range(1, len(fmts)):
        if fmts[i] != fmts[0]:
            raise TypeError(f"argument '{names[i]}' holds {fmts[i]} but argument 'a' holds {fmts[0]}")
    if fmts[0] == "fp64":
        raise ValueError(f"argument 'a' holds fp64 ({'format=' if format is not None else 'float64'}): arithmetic "
                         f"runs in formats of up to 24 significant bits (fp64 is a conversion source only)")
    shape = bits[0].shape
    for i in range(1, len(bits)):
        try:
            shape = np.broadcast_shapes(shape, bits[i].shape)
        except ValueError:
            raise ValueError(f"argument '{names[i]}': shape {tuple(bits[i].shape)} does not broadcast with "
                             f"{'argument ' + repr(names[0]) if i == 1 else 'the shape of a and b'} "
                             f"{tuple(shape)}") from None
    bits = [b if b.shape == shape else np.ascontiguousarray(np.broadcast_to(b, shape)) for b in bits]
    kind = next((k for k in kinds if k.torch), kinds[0])
    opts = _options(rounding, tininess, nan, ftz, daz, saturate, seed, threads)
    return _run(lambda o, m: _core.arith(op, bits, fmts[0], opts, o, m), bits, shape, fmts[0], kind, out,
                return_flags, legacy_tuple)


def _binary(op: str, what: str, example: str):
    """add/sub/mul/div: the same signature, one operation name apart."""

    def fn(a, b, *, format=None, rounding=ROUNDING_DEFAULT, tininess="after", nan="ieee", ftz=False, daz=False,
           saturate=False, seed=None, threads=0, out=None, return_flags=False, legacy_tuple=False):
        return _arith(op, (a, b), format, rounding, tininess, nan, ftz, daz, saturate, seed, threads, out,
                      return_flags, legacy_tuple)

    fn.__name__ = fn.__qualname__ = op
    fn.__doc__ = (f"{what}, correctly rounded in the operands' format (from the dtype, or format= for uint bit\n"
                  f"    patterns). The operands broadcast like NumPy's; the result is of a's kind (a tensor if\n"
                  f"    either is one). out=, return_flags= and legacy_tuple= as in convert().\n\n"
                  f"    {example}\n")
    return fn


add = _binary("add", "a + b", ">>> bf16emu.add(np.uint16([0x3F80]), np.uint16([0x3B80]), format=\"bf16\")  # 1 + 2^-8: a tie\n"
              "    array([16256], dtype=uint16)")
sub = _binary("sub", "a - b", ">>> bf16emu.sub(np.float32([[1], [2]]), np.float32([0.5, 0.25]))  # broadcast to (2, 2)\n"
              "    array([[0.5 , 0.75],\n           [1.5 , 1.75]], dtype=float32)")
mul = _binary("mul", "a * b", ">>> r, mask, flags = bf16emu.mul(np.float32([3e38, 2]), np.float32([10, 2]), return_flags=True)\n"
              "    >>> mask.tolist(), flags\n    ([20, 0], <Flags.OVERFLOW|INEXACT: 20>)")
div = _binary("div", "a / b", ">>> bf16emu.div(np.float32([1.0]), np.float32([3.0]))\n"
              "    array([0.33333334], dtype=float32)")


def fma(a, b, c, *, format=None, rounding=ROUNDING_DEFAULT, tininess="after", nan="ieee", ftz=False, daz=False,
        saturate=False, seed=None, threads=0, out=None, return_flags=False, legacy_tuple=False):
    """a * b + c with one rounding, in the operands' format; broadcasting, out=, return_flags=
    and legacy_tuple= as in add() and convert().

    >>> bf16emu.fma(np.float32([0.1]), np.float32([10.0]), np.float32([-1.0]))  # 0.1f * 10 - 1, one rounding: 2^-26
    array([1.4901161e-08], dtype=float32)
    """
    return _arith("fma", (a, b, c), format, rounding, tininess, nan, ftz, daz, saturate, seed, threads, out,
                  return_flags, legacy_tuple)


def sqrt(a, *, format=None, rounding=ROUNDING_DEFAULT, tininess="after", nan="ieee", ftz=False, daz=False,
         saturate=False, seed=None, threads=0, out=None, return_flags=False, legacy_tuple=False):
    """sqrt(a), correctly rounded in the operand's format; out=, return_flags= and legacy_tuple=
    as in convert().

    >>> bf16emu.sqrt(np.uint16([0x4080]), format="bf16")  # sqrt(4) = 2
    array([16384], dtype=uint16)
    """
    return _arith("sqrt", (a,), format, rounding, tininess, nan, ftz, daz, saturate, seed, threads, out,
                  return_flags, legacy_tuple)

_ARITY = {"add": 2, "sub": 2, "mul": 2, "div": 2, "fma": 3, "sqrt": 1, "convert": 1}


def _scalar_bits(x, fmt, arg):
    """One operand of trace(): a Python int is a bit pattern of fmt; a float is rounded once,
    to nearest even, into fmt; an array/tensor of one element is read as its bits."""
    if isinstance(x, bool):
        raise TypeError(f"argument '{arg}' must be a number, bit pattern or one-element array, got bool")
    if isinstance(x, numbers.Integral) and not isinstance(x, np.generic):
        if fmt is None:
            raise TypeError(f"argument '{arg}' is a bit pattern; say its format with format=")
        width = _PATTERN_WIDTH.get(fmt, _WIDTH[fmt])
        if not 0 <= int(x) < 1 << width:
            raise ValueError(f"argument '{arg}': bit pattern {int(x):#x} does not fit the {width}-bit format {fmt}"
                             if x >= 0 else f"argument '{arg}': bit pattern {int(x)} is negative")
        return int(x), fmt
    if isinstance(x, float):
        f = fmt or "fp32"
        b, _ = _core.convert(np.array([x]).view(np.uint64), "fp64", f, {})
        return int(b[0]), f
    bits, name, _ = to_bits(x, fmt, arg)
    if bits.size != 1:
        raise ValueError(f"argument '{arg}': trace takes one element, got shape {tuple(bits.shape)}")
    return int(bits.reshape(-1)[0]), name


def trace(op: str, *operands, format: str | None = None, to: str | None = None, rounding=ROUNDING_DEFAULT,
          tininess="after", nan="ieee", ftz=False, daz=False, saturate=False, seed=None, index: int = 0):
    """One element's rounding as a dict: guard, round, sticky, decision, error (the exact error
    result - exact value as a decimal string), error_value (as a float), result_bits, result,
    flags, and 'steps' with every rounding event (a second step when to= rounds the result
    again). For convert, `to` is the destination. With rounding='stochastic', element `index`
    of a call with the same seed is traced.

    >>> t = bf16emu.trace("add", -2.4071154594421387, -2.296875, to="bf16")  # the paper's case
    >>> hex(t["result_bits"]), t["guard"], t["round"], t["sticky"], t["decision"], t["error"]
    ('0xc097', 1, 0, 1, 'up', '-0.014759540557861328125')
    """
    op_name = op
    op = _name(op, "op")
    if op not in _ARITY:
        raise ValueError(f"argument 'op': unknown operation {str(op_name)[:80]!r} (add, sub, mul, fma, div, sqrt, convert)")
    if len(operands) != _ARITY[op]:
        raise ValueError(f"{op} takes {_ARITY[op]} operand(s), got {len(operands)}")
    fmt = _format_name(format, "format") if format is not None else None
    got = [_scalar_bits(x, fmt, "abc"[i]) for i, x in enumerate(operands)]
    formats = {f for _, f in got}
    if len(formats) != 1:
        raise TypeError(f"operands of trace hold different formats: {sorted(formats)}")
    fmt = formats.pop()
    if op == "convert" and to is None:
        raise ValueError("argument 'to': convert needs the destination format")
    dst = _format_name(to, "to") if to is not None else ""
    opts = _options(rounding, tininess, nan, ftz, daz, saturate, seed, 0)
    opts["index"] = _int(index, "index", 0, 2**64 - 1)
    d = _core.trace(op, [b for b, _ in got], fmt, dst, opts)
    d["flags"] = Flags(d["flags"])
    return d


# ---------------------------------------------------------------------------
# Cross-check: compare(actual, expected) and explain(index).

def _ordered(bits: np.ndarray, fmt: str):
    """Bit patterns -> (ordered integers, NaN mask): consecutive representable values are
    consecutive integers (+0 and -0 both map to 0), so |a - b| is the distance in ulps."""
    width = _PATTERN_WIDTH.get(fmt, _WIDTH[fmt])  # tf32: a 19-bit pattern in 32-bit storage
    u = bits.astype(np.uint64)
    sign_bit = np.uint64(1) << np.uint64(width - 1)
    mag = (u & (sign_bit - np.uint64(1))).astype(np.int64)
    neg = (u & sign_bit) != 0
    return np.where(neg, -mag, mag), mag > _NAN_ABOVE[fmt]


class Comparison:
    """Result of compare(): count, mismatches (bitwise), ulp_histogram {bucket: count} (buckets
    0, 1, 2, 4, 8, ...: key k counts distances in (k/2, k]; 'nan' counts elements where exactly
    one side is NaN), worst (the element farthest apart),
    first_mismatches (index tuples, in C order), and explain(index).

    >>> c = bf16emu.compare(np.uint16([0x3F80, 0x4000]), np.uint16([0x3F80, 0x4001]), format="bf16")
    >>> c.mismatches, c.ulp_histogram, c.first_mismatches
    (1, {0: 1, 1: 1}, [(1,)])
    """

    def __init__(self, fmt, shape, a_bits, e_bits, first, op, inputs, opts):
        self.format = fmt
        self.shape = tuple(shape)
        self._a, self._e = a_bits, e_bits
        self._op, self._inputs, self._opts = op, inputs, opts
        oa, na = _ordered(a_bits.reshape(-1), fmt)
        oe, ne = _ordered(e_bits.reshape(-1), fmt)
        differ = a_bits.reshape(-1) != e_bits.reshape(-1)
        one_nan = na != ne
        dist = np.where(na | ne, 0, np.abs(oa - oe))
        self.count = int(a_bits.size)
        self.mismatches = int(np.count_nonzero(differ))
        self.nan_mismatches = int(np.count_nonzero(one_nan))
        # Buckets: 0, 1, 2, then powers of two: key k counts distances in (k/2, k].
        d = dist[~one_nan]
        bucket = np.where(d <= 1, d, np.left_shift(1, np.ceil(np.log2(np.maximum(d, 1))).astype(np.int64)))
        keys, counts = np.unique(bucket, return_counts=True)
        self.ulp_histogram = {int(k): int(c) for k, c in zip(keys, counts)}
        if self.nan_mismatches:
            self.ulp_histogram["nan"] = self.nan_mismatches
        idx = np.flatnonzero(differ)[:first]
        self.first_mismatches = [self._index(int(i)) for i in idx]
        if self.mismatches == 0:
            self.worst = None
        else:
            score = np.where(one_nan, np.iinfo(np.int64).max, dist).astype(np.int64)
            score[~differ] = -1
            w = int(np.argmax(score))
            self.worst = self._element(w)

    def _index(self, flat: int):
        return tuple(int(v) for v in np.unravel_index(flat, self.shape)) if self.shape else ()

    def _element(self, flat: int) -> dict:
        a = int(self._a.reshape(-1)[flat])
        e = int(self._e.reshape(-1)[flat])
        oa, na = _ordered(np.array([a], np.uint64), self.format)
        oe, ne = _ordered(np.array([e], np.uint64), self.format)
        ulps = None if bool(na[0]) != bool(ne[0]) else (0 if na[0] else int(abs(int(oa[0]) - int(oe[0]))))
        return {"index": self._index(flat), "actual_bits": a, "expected_bits": e,
                "actual": _core.value(self.format, a), "expected": _core.value(self.format, e), "ulps": ulps}

    def explain(self, index) -> dict:
        """The element at `index` (a tuple, or a flat int): both values and their ulp distance;
        when compare() was given op= and inputs=, also bf16emu.trace() of that element's
        operation (the 'trace' key): guard, round, sticky, decision and exact error.

        >>> c = bf16emu.compare(np.uint16([0x4000]), np.uint16([0x4001]), format="bf16")
        >>> c.explain(0)["ulps"], c.explain(0)["expected"]
        (1, 2.015625)
    """
        if isinstance(index, numbers.Integral) and not isinstance(index, bool):
            flat = int(index)
            if not 0 <= flat < self.count:
                raise ValueError(f"argument 'index' = {flat} is outside [0, {self.count})")
        else:
            try:
                flat = int(np.ravel_multi_index(tuple(int(i) for i in index), self.shape))
            except (TypeError, ValueError) as err:
                raise ValueError(f"argument 'index' = {str(index)[:80]} does not index shape {self.shape}") from err
        d = self._element(flat)
        if self._op is not None:
            ops = [np.asarray(x).reshape(-1)[flat] for x in self._inputs]
            d["trace"] = trace(self._op, *[int(v) for v in ops], format=self._inputs_format, **self._opts)
        return d

    def plot(self, path=None, **kwargs):
        """The ulp histogram and the error map (bf16emu.plot.comparison; needs matplotlib):
        returns the matplotlib Figure, and with path= writes it as a PNG. c.plot("c.png").
        (Its example is bf16emu.plot.comparison's, run by tests/python/test_plots.py, which
        skips without matplotlib.)
        """
        from .plot import comparison
        return comparison(self, path, **kwargs)

    def as_dict(self) -> dict:
        return {"format": self.format, "count": self.count, "mismatches": self.mismatches,
                "nan_mismatches": self.nan_mismatches, "ulp_histogram": dict(self.ulp_histogram),
                "worst": self.worst, "first_mismatches": list(self.first_mismatches)}

    def __repr__(self) -> str:
        return (f"Comparison({self.format}, count={self.count}, mismatches={self.mismatches}, "
                f"ulp_histogram={self.ulp_histogram}, worst={self.worst})")


def compare(actual, expected, *, format: str | None = None, first: int = 10, op: str | None = None,
            inputs=(), input_format: str | None = None, rounding=ROUNDING_DEFAULT, tininess="after", nan="ieee",
            ftz=False, daz=False, saturate=False):
    """Compare two arrays/tensors of one format element by element (bit patterns). With op=
    and inputs= (the operands that produced `expected` through that bf16emu operation),
    explain(index) adds the trace of the element's rounding.

    >>> a, b = np.uint16([0x3F80]), np.uint16([0x3B80])  # 1 + 2^-8 in bf16: a tie
    >>> mine = np.uint16([0x3F81])                      # a kernel that rounded it up
    >>> c = bf16emu.compare(mine, bf16emu.add(a, b, format="bf16"), format="bf16", op="add", inputs=(a, b))
    >>> c.mismatches, c.explain(0)["trace"]["decision"]
    (1, 'tie_down')
    """
    if isinstance(inputs, (str, bytes)) or not isinstance(inputs, (tuple, list)):
        raise TypeError(f"argument 'inputs' must be a tuple or list of arrays, got {type(inputs).__name__}")
    a_bits, fa, _ = to_bits(actual, format, "actual")
    e_bits, fe, _ = to_bits(expected, format, "expected")
    if fa != fe:
        raise TypeError(f"argument 'expected' holds {fe} but argument 'actual' holds {fa}")
    if a_bits.shape != e_bits.shape:
        raise ValueError(f"argument 'expected': shape {tuple(e_bits.shape)} does not match argument 'actual' "
                         f"{tuple(a_bits.shape)}")
    if isinstance(first, bool) or not isinstance(first, numbers.Integral) or first < 0:
        raise ValueError(f"argument 'first' must be a count >= 0, got {first!r:.80}")
    ins, in_fmt = [], None
    if op is not None:
        op_name, op = op, _name(op, "op")
        if op not in _ARITY or op == "convert":
            raise ValueError(f"argument 'op': unknown operation {str(op_name)[:80]!r} (add, sub, mul, fma, div, sqrt)")
        if len(inputs) != _ARITY[op]:
            raise ValueError(f"argument 'inputs': {op} takes {_ARITY[op]} operand(s), got {len(inputs)}")
        for i, x in enumerate(inputs):
            b, f, _ = to_bits(x, input_format or format, f"inputs[{i}]",
                              "input_format" if input_format is not None else "format")
            if b.shape != a_bits.shape:
                raise ValueError(f"argument 'inputs[{i}]': shape {tuple(b.shape)} does not match {tuple(a_bits.shape)}")
            ins.append(b)
            in_fmt = f
    checked = _options(rounding, tininess, nan, ftz, daz, saturate, None, 0)  # names checked now, not in explain()
    opts = {k: checked[k] for k in ("rounding", "tininess", "nan", "ftz", "daz", "saturate")}
    c = Comparison(fa, a_bits.shape, a_bits, e_bits, int(first), op, ins, opts)
    c._inputs_format = in_fmt
    if op is not None and in_fmt != fa:
        c._opts = dict(opts, to=fa)
    return c


# ---------------------------------------------------------------------------
# Tensor cores.


def gemm(a, b, c=None, *, arch: str = "sm80", kind: str | None = None, a_format: str | None = None,
         c_format: str | None = None, trace=None, threads: int = 0, split_k: int = 1, slice: int | None = None,
         order: str = "sequential", partial_format: str | None = None, c_entry: str = "first",
         out_format: str | None = None, b_format: str | None = None, scale_a=None, scale_b=None,
         scale_format: str | None = None, scale_vec: int | None = None, zero_exp: str | None = None,
         _single: bool = False):
    """D = A B + C on the tensor-core model of `arch` (tc presets, docs/tensor-cores.md): K is
    cut into the instruction's k chunks, each a chain of hardware blocks. a (M x K) and b
    (K x N) in the input format (bf16/fp16/tf32/e4m3/e5m2: from the dtype, or a_format= for
    uint bits), c (M x N) in the accumulator format (fp32 or fp16; None: zeros in fp32, or in
    c_format). kind: mma, wgmma or tcgen05 (default: the architecture's own). Returns D in
    c's kind; with trace=(i, j), returns (D, trace) where trace lists the blocks of D[i, j].

    >>> a = bf16emu.convert(np.ones((16, 32), np.float32), to="bf16")
    >>> b = bf16emu.convert(np.ones((32, 8), np.float32), to="bf16")
    >>> d, tr = bf16emu.gemm(a, b, a_format="bf16", arch="sm80", trace=(0, 0))
    >>> d.shape, float(d[0, 0]), len(tr["blocks"])
    ((16, 8), 32.0, 4)

    Split-k and the sum of the partials (the GEMM family of explain_gemm, docs/explain-gemm.md):
    split_k= slices of ceil(K / split_k) products (or slice= products each), each computed on
    the preset (arch= may also be "ieee-fma" or "ieee-mul-add": plain binary32 arithmetic in k
    order), each partial rounded to partial_format (fp32, the default, or D's format), added
    in order= ("sequential" or "pairwise") in that format; c_entry="first" (C enters slice 0)
    or "end" (C added after the partials); out_format= rounds D into fp32, fp16 or bf16
    (default: C's format). With trace=(i, j) the trace also holds each slice's partial and
    the member.

    >>> a = bf16emu.convert(np.float32([[1.0, 2.0**-9, 2.0**-9, 2.0**-9]]), to="bf16")
    >>> b = bf16emu.convert(np.ones((4, 1), np.float32), to="bf16")
    >>> d1 = bf16emu.gemm(a, b, a_format="bf16", arch="ieee-mul-add", out_format="bf16")
    >>> d2 = bf16emu.gemm(a, b, a_format="bf16", arch="ieee-mul-add", out_format="bf16", split_k=2, partial_format="bf16")
    >>> hex(int(d1[0, 0])), hex(int(d2[0, 0]))  # 1 + 3 * 2^-9 rounded once; (1 + 2^-9 -> 1) + 2^-8: a tie
    ('0x3f81', '0x3f80')

    Mixed-format and block-scaled kinds (sm100 tcgen05, sm120 mma.sync; docs/tensor-cores.md):
    kind="f8f6f4", "mxf8f6f4", "mxf4" or "mxf4nvf4"; a and b as uint8 bit patterns with
    a_format= and b_format= (e4m3, e5m2, e3m2, e2m3, e2m1; one code per byte), scale_a (M x K/vec)
    and scale_b (K/vec x N) as uint8 bit patterns of scale_format= (ue8m0 or ue4m3), scale_vec=
    16 or 32 (default: the kind's). D in fp32 (or fp16 for kind::f8f6f4 with a fp16 c).

    >>> a = np.zeros((1, 64), np.uint8); a[0, [0, 16, 32]] = 0x2  # e2m1 1.0
    >>> d = bf16emu.gemm(a, a.T.copy(), arch="sm120", kind="mxf4nvf4", a_format="e2m1", scale_format="ue4m3",
    ...                  scale_vec=32, scale_a=np.uint8([[0x40, 0x48]]), scale_b=np.uint8([[0x38], [0x38]]))
    >>> float(d[0, 0])  # 1*2 + 1*2 (factor 0 covers k 0..31) + 1*4
    8.0

    AMD CDNA MFMA (arch="cdna1" .. "cdna3", or mi100/gfx908 ...): kind= names the instruction
    ("v_mfma_f32_32x32x8_bf16"), or a_format= (or a's dtype) picks the arch's first of that type;
    fp8/bf8 (FNUZ) operands as uint8 bit patterns, xf32 as float32. C and D fp32 (fp64 for f64).

    zero_exp="mmasim" gives zero terms MMA-Sim's exponents instead of the preset's e_zero (NVIDIA
    presets and kinds; docs/tensor-cores.md, "The zero-term exponent").
    """
    arch = _name(arch, "arch")
    kind = None if kind is None else _name(kind, "kind")
    zero_exp = None if zero_exp is None else _name(zero_exp, "zero_exp")
    _threads(threads)
    if _core.is_amd_arch(arch):
        if zero_exp is not None:
            raise ValueError("argument 'zero_exp' applies to the NVIDIA presets, not to the AMD models")
        return _gemm_amd(a, b, c, arch, kind, a_format, c_format, trace, threads, _single)
    if kind in _SCALED_KINDS or scale_a is not None or scale_b is not None or scale_format is not None:
        return _gemm_scaled(a, b, c, arch, kind, a_format, b_format, c_format, scale_a, scale_b, scale_format,
                            scale_vec, zero_exp, trace, threads, _single)
    a_bits, fin, kind_a = to_bits(a, a_format, "a", "a_format")
    b_bits, fb, _ = to_bits(b, a_format or fin, "b", "a_format")
    if fb != fin:
        raise TypeError(f"argument 'b' holds {fb} but argument 'a' holds {fin}")
    if b_format is not None and _format_name(b_format, "b_format") != fin:
        raise ValueError(f"argument 'b_format': the {arch} presets of gemm take B in A's format {fin} "
                         f"(other B formats: kind='f8f6f4' and the block-scaled kinds)")
    split_k = _int(split_k, "split_k", 1, INT_MAX)
    order, c_entry = _name(order, "order"), _name(c_entry, "c_entry")
    if (arch in _IEEE_ENGINES or split_k != 1 or slice is not None or order != "sequential"
            or partial_format is not None or c_entry != "first" or out_format is not None):
        if zero_exp is not None:
            raise ValueError("argument 'zero_exp' is not available with split_k, slice, order, partial_format, "
                             "c_entry or out_format")
        return _gemm_family(a_bits, fin, kind_a, b_bits, c, arch, kind, c_format, trace, threads, split_k, slice,
                            order, partial_format, c_entry, out_format)
    if c is None:
        fout = _format_name(c_format, "c_format") if c_format is not None else "fp32"
        if a_bits.ndim != 2 or b_bits.ndim != 2:
            raise ValueError("arguments 'a' and 'b' must be 2-d (M x K, K x N)")
        c_bits = np.zeros((a_bits.shape[0], b_bits.shape[1]), dtype=_BITS_DTYPE[_WIDTH[fout]])
        kind_c = _Kind(kind_a.torch, True)
    else:
        c_bits, fout, kind_c = to_bits(c, c_format, "c", "c_format")
    ti, tj = (-1, -1) if trace is None else _pair(trace)
    _options(ROUNDING_DEFAULT, "after", "ieee", False, False, False, None, threads)
    d_bits, blocks, info = _core.gemm(a_bits, b_bits, c_bits, fin, fout, arch, kind or "", _single, ti, tj,
                                      int(threads), zero_exp or "")
    d = from_bits(d_bits, fout, kind_c)
    if trace is None:
        return d
    info["element"] = (ti, tj)
    info["blocks"] = blocks
    return d, info


_IEEE_ENGINES = ("ieee-fma", "ieee-mul-add")
_SCALED_KINDS = ("f8f6f4", "mxf8f6f4", "mxf4", "mxf4nvf4")


def _u64(bits) -> np.ndarray:
    return np.ascontiguousarray(bits, dtype=np.uint64)


def _c_bits(c, c_format, fout_default, shape, kind_a):
    """C's bit patterns, its format and kind: zeros of fout_default when c is None."""
    if c is None:
        fout = _format_name(c_format, "c_format") if c_format is not None else fout_default
        return np.zeros(shape, dtype=_BITS_DTYPE[_WIDTH[fout]]), fout, _Kind(kind_a.torch, True)
    return to_bits(c, c_format, "c", "c_format")


def _byte_bits(x, arg: str):
    """uint8 bit patterns (scale factors, FNUZ fp8/bf8) of an array or tensor; None: an empty (0, 0)."""
    if x is None:
        return np.zeros((0, 0), np.uint8)
    a = _cpu_tensor(x, arg).detach().numpy() if _is_tensor(x) else np.asarray(x)
    if a.dtype != np.uint8:
        raise TypeError(f"argument '{arg}' must hold uint8 bit patterns, got dtype {a.dtype}")
    return np.ascontiguousarray(a)


def _gemm_scaled(a, b, c, arch, kind, a_format, b_format, c_format, scale_a, scale_b, scale_format, scale_vec,
                 zero_exp, trace, threads, single):
    if kind not in _SCALED_KINDS:
        raise ValueError(f"scale_a, scale_b and scale_format need kind= one of {', '.join(_SCALED_KINDS)}, "
                         f"got {str(kind)[:80]!r}")
    if trace is not None:
        raise ValueError("argument 'trace' is not available for the mixed-format and block-scaled kinds")
    if kind != "f8f6f4" and (scale_a is None or scale_b is None):
        raise ValueError(f"kind '{kind}' needs scale_a and scale_b (uint8 bit patterns of the scale factors)")
    a_bits, fa, kind_a = to_bits(a, a_format, "a", "a_format")
    b_bits, fb, _ = to_bits(b, b_format if b_format is not None else a_format, "b",
                            "b_format" if b_format is not None else "a_format")
    scale_format = None if scale_format is None else _name(scale_format, "scale_format")
    if a_bits.ndim != 2 or b_bits.ndim != 2:
        raise ValueError("arguments 'a' and 'b' must be 2-d (M x K, K x N)")
    c_bits, fout, kind_c = _c_bits(c, c_format, "fp32", (a_bits.shape[0], b_bits.shape[1]), kind_a)
    vec = 0 if scale_vec is None else _count(scale_vec, "scale_vec", 1)
    _options(ROUNDING_DEFAULT, "after", "ieee", False, False, False, None, threads)
    d = _core.gemm_scaled(_u64(a_bits), _u64(b_bits), _u64(c_bits), _byte_bits(scale_a, "scale_a"),
                          _byte_bits(scale_b, "scale_b"), fa, fb, fout, arch, kind, scale_format or "", vec,
                          zero_exp or "", single, int(threads))
    return from_bits(d.astype(_BITS_DTYPE[_WIDTH[fout]]), fout, kind_c)


def _amd_operand(x, fmt: str, arg: str):
    """(uint64 bit patterns, kind) of an AMD operand of the instruction's type fmt."""
    if fmt in ("fp8", "bf8"):  # FNUZ bytes: no float dtype holds them
        return _u64(_byte_bits(x, arg)), _Kind(_is_tensor(x), False)
    bits, _, kind = to_bits(x, "fp32" if fmt == "xf32" else fmt, arg)
    return _u64(bits), kind


def _gemm_amd(a, b, c, arch, kind, a_format, c_format, trace, threads, single):
    if trace is not None:
        raise ValueError("argument 'trace' is not available for the AMD models")
    fmt = a_format
    if kind is None and fmt is None:  # the instruction from a's dtype
        _, fmt, _ = to_bits(a, None, "a")
    fa, fb, fout, _ = _core.amd_formats(arch, kind or "", fmt or "", "fp32")
    a_bits, kind_a = _amd_operand(a, fa, "a")
    b_bits, _ = _amd_operand(b, fb, "b")
    if a_bits.ndim != 2 or b_bits.ndim != 2:
        raise ValueError("arguments 'a' and 'b' must be 2-d (M x K, K x N)")
    c_bits, fc, kind_c = _c_bits(c, c_format, fout, (a_bits.shape[0], b_bits.shape[1]), kind_a)
    if fc != fout:
        raise ValueError(f"argument 'c': the instruction takes C in {fout}, not {fc}")
    _options(ROUNDING_DEFAULT, "after", "ieee", False, False, False, None, threads)
    d = _core.gemm_amd(a_bits, b_bits, _u64(c_bits), arch, kind or "", fmt or "", "fp32", single, int(threads))
    return from_bits(d.astype(_BITS_DTYPE[_WIDTH[fout]]), fout, kind_c)


def _count(x, arg: str, low: int, high: int = INT_MAX) -> int:
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, numbers.Integral) or not low <= x <= high:
        raise ValueError(f"argument '{arg}' must be an integer in [{low}, {high}], got {x!r:.80}")
    return int(x)


def _pair(trace):
    """trace=(i, j): two integer indices (not floats, not a str of digits)."""
    if isinstance(trace, (str, bytes)) or not isinstance(trace, (tuple, list)) or len(trace) != 2 or not all(
            isinstance(v, numbers.Integral) and not isinstance(v, (bool, np.bool_)) for v in trace):
        raise ValueError(f"argument 'trace' must be an (i, j) pair of integers, got {str(trace)[:80]}")
    ti, tj = (int(v) for v in trace)
    if ti < 0 or tj < 0:
        raise ValueError(f"argument 'trace' = ({ti}, {tj}) has a negative index")
    if ti > INT_MAX or tj > INT_MAX:
        raise ValueError(f"argument 'trace' = ({ti}, {tj}): element outside the output")
    return ti, tj


def _member(arch, kind, accumulator, split_k, slice, order, partial, c_entry) -> dict:
    if order not in ("sequential", "pairwise"):
        raise ValueError(f"argument 'order' must be 'sequential' or 'pairwise', got {str(order)[:80]!r}")
    if c_entry not in ("first", "end"):
        raise ValueError(f"argument 'c_entry' must be 'first' or 'end', got {str(c_entry)[:80]!r}")
    engine = arch if arch in _IEEE_ENGINES else "preset"
    return {"engine": engine, "arch": "" if engine != "preset" else arch, "kind": kind or "",
            "accumulator": accumulator, "split_k": _count(split_k, "split_k", 1),
            "slice": 0 if slice is None else _count(slice, "slice", 1), "order": order,
            "partial_format": partial, "c_entry": c_entry}


def _gemm_family(a_bits, fin, kind_a, b_bits, c, arch, kind, c_format, trace, threads, split_k, slice, order,
                 partial_format, c_entry, out_format):
    if c is None:
        fc = _format_name(c_format, "c_format") if c_format is not None else "fp32"
        c_bits, kind_c = None, _Kind(kind_a.torch, True)
    else:
        c_bits, fc, kind_c = to_bits(c, c_format, "c", "c_format")
    acc = fc if fc in ("fp32", "fp16") else "fp32"  # the preset's D format
    fd = _format_name(out_format, "out_format") if out_format is not None else fc
    pf = _format_name(partial_format, "partial_format") if partial_format is not None else "fp32"
    member = _member(arch, kind, acc, split_k, slice, order, pf, c_entry)
    ti = tj = -1
    if trace is not None:
        ti, tj = _pair(trace)
    _options(ROUNDING_DEFAULT, "after", "ieee", False, False, False, None, threads)
    d_bits, blocks, partials, info = _core.gemm_member(a_bits, b_bits, c_bits, fin, fc, fd, member, ti, tj,
                                                       int(threads))
    d = from_bits(d_bits, fd, kind_c)
    if trace is None:
        return d
    return d, {"member": info, "element": (ti, tj), "blocks": blocks, "partials": partials}


def _load(x, arg: str):
    """A .npy path (str or os.PathLike) -> its array; anything else unchanged."""
    if isinstance(x, (str, os.PathLike)):
        try:
            return np.load(x, allow_pickle=False)
        except (OSError, ValueError) as err:
            raise ValueError(f"argument '{arg}': cannot read {str(x)[:80]!r} as .npy: {str(err)[:80]}") from err
    return x


class GemmExplanation:
    """Result of explain_gemm(): members (how many the family had), sample (elements every
    member was compared on), match (the first member reproducing every element bit for bit,
    as a dict with 'name', or None), matches (all such members), ranking (members with their
    mismatch counts, fewest first), first_unexplained ((i, j) of the first sampled element no
    member reproduces, or None), mismatch (with no match: the best member's first mismatching
    element, its expected and computed bits, the slices' partials and the block trace).
    str() is the report; as_dict() is JSON-ready.

    >>> a = bf16emu.convert(np.float32([[1.0, 1.5 * 2.0**-24]]), to="bf16")
    >>> b = bf16emu.convert(np.float32([[1.0], [1.0]]), to="bf16")
    >>> e = bf16emu.explain_gemm(a, b, np.float32([[1.0 + 2.0**-23]]), a_format="bf16", max_split=1)
    >>> e.match["engine"], [m["engine"] for m in e.matches]  # rounded up: IEEE; tensor cores truncate to 1
    ('ieee-fma', ['ieee-fma', 'ieee-mul-add'])
    """

    def __init__(self, raw: dict, shape, top: int, mismatch):
        self.members = int(raw["members"])
        self.sample = int(raw["sample"])
        self.shape = tuple(shape)
        rank = raw["ranking"]
        self.matches = [m for m in rank if m["mismatches"] == 0 and m["all"]]
        self.match = self.matches[0] if self.matches else None
        self.ranking = rank[:top] if top else list(rank)
        fu = int(raw["first_unexplained"])
        self.first_unexplained = None if fu < 0 else self._index(fu)
        self.mismatch = mismatch

    def _index(self, flat: int):
        return (flat // self.shape[1], flat % self.shape[1])

    def as_dict(self) -> dict:
        return {"members": self.members, "sample": self.sample, "match": self.match, "matches": self.matches,
                "ranking": self.ranking, "first_unexplained": self.first_unexplained, "mismatch": self.mismatch}

    def __str__(self) -> str:
        lines = [f"searched {self.members} members, each on {self.sample} of "
                 f"{self.shape[0] * self.shape[1]} elements"]
        if self.match:
            lines.append(f"match: {self.match['name']}")
            if len(self.match.get("same_arithmetic", [])) > 1:
                lines.append("  same arithmetic: " + "; ".join(self.match["same_arithmetic"][1:]))
            if len(self.matches) > 1:
                lines.append(f"  {len(self.matches) - 1} other member(s) also reproduce every element:")
                lines += [f"    {m['name']}" for m in self.matches[1:6]]
        else:
            lines.append("no member reproduces the result")
            if self.first_unexplained is not None:
                lines.append(f"first element no member reproduces: {self.first_unexplained}")
        lines.append("ranking (mismatching elements / compared):")
        lines += [f"  {m['mismatches']:>6} / {m['checked']:<6} {m['name']}" for m in self.ranking]
        if self.mismatch:
            mm = self.mismatch
            lines.append(f"best member's first mismatch at {mm['element']}: result {mm['result']} "
                         f"({mm['result_bits']:#x}), member {mm['member_value']} ({mm['member_bits']:#x})")
            lines.append("  partials: " + ", ".join(f"{p:#010x}" for p in mm["partials"]))
            for blk in mm["blocks"]:
                lines.append(f"  slice {blk['slice']} block {blk['block']} k0 {blk['k0']}: c {blk['c_bits']:#x} -> "
                             f"d {blk['d_bits']:#x}, max_exp {blk['max_exp']}, lsb 2^{blk['lsb_exp']}, "
                             f"lost {sum(t['lost'] for t in blk['terms']):.6g}, trunc_err {blk['trunc_err']:.6g}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (f"GemmExplanation(members={self.members}, match={self.match['name'] if self.match else None!r}, "
                f"first_unexplained={self.first_unexplained})")


def explain_gemm(a, b, result, *, c=None, a_format: str | None = None, c_format: str | None = None,
                 result_format: str | None = None, arch: str | None = None, max_split: int = 4,
                 presets: bool = True, ieee: bool = True, c_at_end: bool = True, sample: int = 4096, top: int = 10,
                 threads: int = 0) -> GemmExplanation:
    """Which way of computing D = A B (+ C) reproduces `result` bit for bit? Searches the GEMM
    family (docs/explain-gemm.md): tensor-core presets taking A's format (arch= keeps one
    architecture's) and plain IEEE fp32 (ieee-fma, ieee-mul-add); split-k 1 .. max_split;
    partial sums added sequentially or pairwise, in fp32 or D's format; C first or at the end.
    a (M x K), b (K x N), result (M x N) and c (M x N) are arrays, tensors or .npy paths; bit
    patterns (uint) need a_format=, c_format=, result_format=. Every member is compared on up
    to `sample` elements, those that reproduce all of them on every element. Returns a
    GemmExplanation: .match names the first member (in family order) reproducing every element;
    with none, .mismatch holds the best member's first mismatching element with its trace.

    >>> rng = np.random.default_rng(0)
    >>> a = bf16emu.convert(rng.standard_normal((8, 64)).astype(np.float32), to="bf16")
    >>> b = bf16emu.convert(rng.standard_normal((64, 8)).astype(np.float32), to="bf16")
    >>> d = bf16emu.gemm(a, b, a_format="bf16", arch="sm90", split_k=2)
    >>> e = bf16emu.explain_gemm(a, b, d, a_format="bf16")
    >>> e.match["arch"], e.match["split_k"], e.match["order"], e.match["c_entry"]
    ('sm90', 2, 'sequential', 'first')
    """
    a, b, result = _load(a, "a"), _load(b, "b"), _load(result, "result")
    c = _load(c, "c") if c is not None else None
    arch = None if arch is None else _name(arch, "arch")
    opts = {"max_split": _count(max_split, "max_split", 1), "presets": _bool(presets, "presets"),
            "ieee": _bool(ieee, "ieee"), "c_at_end": _bool(c_at_end, "c_at_end"), "arch": arch or "",
            "sample": _count(sample, "sample", 1)}
    top = _count(top, "top", 0)
    _threads(threads)
    a_bits, fin, _ = to_bits(a, a_format, "a", "a_format")
    b_bits, fb, _ = to_bits(b, a_format or fin, "b", "a_format")
    if fb != fin:
        raise TypeError(f"argument 'b' holds {fb} but argument 'a' holds {fin}")
    r_bits, fd, _ = to_bits(result, result_format, "result", "result_format")
    c_bits, fc = None, "fp32"
    if c is not None:
        c_bits, fc, _ = to_bits(c, c_format, "c", "c_format")
    _options(ROUNDING_DEFAULT, "after", "ieee", False, False, False, None, threads)
    raw = _core.explain_gemm(a_bits, b_bits, c_bits, r_bits, fin, fc, fd, opts, int(threads))
    shape = r_bits.shape
    mismatch = None
    rank = raw["ranking"]
    if rank and not (rank[0]["mismatches"] == 0 and rank[0]["all"]):
        best = rank[0]
        flat = int(best["first_mismatch"])
        i, j = flat // shape[1], flat % shape[1]
        member = {k: best[k] for k in ("engine", "split_k", "slice", "order", "partial_format", "c_entry",
                                       "accumulator")}
        member["arch"], member["kind"] = best.get("arch", ""), best.get("kind", "")
        d_bits, blocks, partials, _ = _core.gemm_member(a_bits[i:i + 1], b_bits, None if c_bits is None else
                                                        c_bits[i:i + 1], fin, fc, fd, member, 0, j, 1)
        got, want = int(d_bits[0, j]), int(r_bits[i, j])
        mismatch = {"member": best["name"], "element": (i, j), "result_bits": want,
                    "result": _core.value(fd, want), "member_bits": got, "member_value": _core.value(fd, got),
                    "partials": [int(p) for p in partials], "blocks": blocks}
    return GemmExplanation(raw, shape, top, mismatch)


def mma(a, b, c=None, *, arch: str = "sm80", kind: str | None = None, a_format: str | None = None,
        c_format: str | None = None, trace=None, b_format: str | None = None, scale_a=None, scale_b=None,
        scale_format: str | None = None, scale_vec: int | None = None, zero_exp: str | None = None):
    """One tensor-core instruction D = A B + C on the preset's exact m x n x k tile (e.g.
    16x8x16 for sm80 mma.sync bf16; 16x8x64 for sm120 kind::mxf4nvf4; 32x32x8 for AMD
    v_mfma_f32_32x32x8_bf16): the shapes must match the instruction. See gemm().

    >>> a = bf16emu.convert(np.ones((16, 16), np.float32), to="bf16")
    >>> b = bf16emu.convert(np.ones((16, 8), np.float32), to="bf16")
    >>> bf16emu.mma(a, b, a_format="bf16", arch="sm80")[0, 0]
    16.0
    """
    return gemm(a, b, c, arch=arch, kind=kind, a_format=a_format, c_format=c_format, trace=trace, threads=1,
                b_format=b_format, scale_a=scale_a, scale_b=scale_b, scale_format=scale_format, scale_vec=scale_vec,
                zero_exp=zero_exp, _single=True)


# ---------------------------------------------------------------------------
# Attention.


def _as_float64(x, arg: str, fmt):
    bits, name, _ = to_bits(x, fmt, arg)
    if name == "fp64":
        return bits.view(np.float64)
    out, _ = _core.convert(bits, name, "fp64", {})  # exact widening
    return out.view(np.float64)


def attention(q, k, v, *, policy: str = "fa2:sm80", variant: str = "fa2", beta: float = 2.0, causal: bool = False,
              ledger: bool = True, reference: bool = True, block_m: int = 0, block_n: int = 0,
              format: str | None = None, threads: int = 0, sites=None, scale=None, _do=None, _backward: str = ""):
    """Attention forward under a rounding policy (exact, fp32, paper, paper:autocast,
    fa2:sm80/sm89/sm90/sm100, fa2_twin) and variant (standard, fa2, stabilized with beta). q, k,
    v: (batch, heads, seq, dim), PyTorch's layout, any float dtype (values are taken exactly).
    sites: the CLI's --site-precision overrides, as {"row_sum": "fp32"} or "row_sum=fp32,pv=exact";
    scale: the softmax scale (None: 1/sqrt(dim) rounded to FP32). Returns a dict: 'o'
    (batch, heads, seq, dim) and 'lse' (batch, heads, seq) as float64 arrays holding the
    policy's output values, 'o_exact' and 'output_error' (with reference=True), 'ledger'
    (sites -> error counts and sums; with ledger=True), and the policy settings.

    >>> q = np.random.default_rng(0).standard_normal((1, 2, 16, 8))   # (batch, heads, seq, dim)
    >>> r = bf16emu.attention(q, q, q, policy="paper:autocast", causal=True)
    >>> r["o"].shape, r["lse"].shape, "ledger" in r
    ((1, 2, 16, 8), (1, 2, 16), True)
    """
    for name, val in (("policy", policy), ("variant", variant)):
        _name(val, name)  # spelling: the core's parsers apply the same rule
    for name, val in (("causal", causal), ("ledger", ledger), ("reference", reference)):
        _bool(val, name)
    if not isinstance(beta, numbers.Real) or isinstance(beta, bool) or not math.isfinite(float(beta)):
        raise ValueError(f"argument 'beta' must be a positive finite number, got {beta!r:.80}")
    arrays = [_as_float64(x, n, format) for x, n in ((q, "q"), (k, "k"), (v, "v"))]
    for x, n in zip(arrays, "qkv"):
        if x.ndim != 4:
            raise ValueError(f"argument '{n}' must be 4-d (batch, heads, seq, dim), got shape {tuple(x.shape)}")
    dout = _as_float64(_do, "do", format) if _backward else None
    for name, val in (("block_m", block_m), ("block_n", block_n)):
        if isinstance(val, bool) or not isinstance(val, numbers.Integral) or val < 0 or val > 1 << 20:
            raise ValueError(f"argument '{name}' must be an integer in 0..2^20, got {val!r:.80}")
    _threads(threads)
    return _core.attention(arrays[0], arrays[1], arrays[2], dout, policy, variant, float(beta), bool(causal),
                           int(block_m), int(block_n), bool(ledger), bool(reference), _backward, int(threads),
                           _site_spec(sites), _softmax_scale(scale))


def _site_spec(sites) -> str:
    """The --site-precision text of `sites`: None, a "SITE=PREC,..." string or a {site: prec} dict."""
    if sites is None:
        return ""
    if isinstance(sites, str):
        return sites
    if not isinstance(sites, dict):
        raise TypeError(f"argument 'sites' must be a dict {{site: precision}} or a str, got {type(sites).__name__}")
    for key, val in sites.items():
        if not isinstance(key, str) or not isinstance(val, str):
            raise TypeError(f"argument 'sites': keys and values must be names (str), got {key!r:.40}: {val!r:.40}")
        for what, text in (("key", key), ("value", val)):
            if "," in text or "=" in text or not text.strip():
                raise ValueError(f"argument 'sites': {what} {text[:80]!r} is not one name (a site name: precision "
                                 f"fp32, exact or policy; one entry per site)")
    return ",".join(f"{key.strip()}={val.strip()}" for key, val in sites.items())


def _softmax_scale(scale) -> float:
    if scale is None:
        return 0.0
    if isinstance(scale, bool) or not isinstance(scale, numbers.Real) or not (0 < float(scale) < math.inf):
        raise ValueError(f"argument 'scale' must be a positive finite number or None, got {scale!r:.80}")
    return float(scale)


def attention_backward(q, k, v, do, *, backward: str = "reference", **kwargs):
    """Forward and backward (dq, dk, dv, delta, and their errors against the exact policy's
    reference backward) under the policy; backward='reference', 'tiled' (the FlashAttention-2
    tiled backward), or under the paper policies 'authors' (the paper authors' attention.py
    backward; under paper:autocast run under autocast, an inference: docs/attention.md) or
    'authors:promote' (its eager reading, the mixed FP32 x BF16 einsums in FP32). Same arguments
    and dict as attention(), plus these keys.

    >>> q = np.random.default_rng(0).standard_normal((1, 1, 8, 4))
    >>> r = bf16emu.attention_backward(q, q, q, np.ones_like(q), policy="fa2:sm90", backward="tiled")
    >>> r["dq"].shape, r["dk"].shape, r["dv"].shape
    ((1, 1, 8, 4), (1, 1, 8, 4), (1, 1, 8, 4))
    """
    if not isinstance(backward, str) or not backward.strip():
        raise ValueError(f"argument 'backward' must name a backward kind (the core's: reference, tiled, ...), "
                         f"got {str(backward)[:80]!r}")
    return attention(q, k, v, _do=do, _backward=backward, **kwargs)


# ---------------------------------------------------------------------------
# OCP MX block scaling (docs/formats.md): quantize_mx and its exact inverse.

_MX_ELEMENTS = ("e2m1", "e2m3", "e3m2", "e4m3", "e5m2")


def _block_size(block) -> int:
    if isinstance(block, bool) or not isinstance(block, numbers.Integral):
        raise TypeError(f"argument 'block' must be an integer, got {type(block).__name__}")
    if not 1 <= int(block) <= 4096:
        raise ValueError(f"argument 'block' = {int(block)} is outside 1..4096")
    return int(block)


def quantize_mx(x, elem: str = "e2m1", *, block: int = 32, format: str | None = None,
                rounding: str = ROUNDING_DEFAULT, tininess: str = "after", nan: str = "ieee", threads: int = 0):
    """OCP MX v1.0 block quantization along the last axis, `block` elements per shared scale.
    Returns (scales, elements, flags): scales are UE8M0 bytes (value 2^(s - 127), 0xFF = NaN) of
    shape x.shape[:-1] + (x.shape[-1] // block,); elements are `elem` bit patterns (uint8, one
    per byte) of x's shape; flags are those of the element roundings. The scale is
    2^(floor(log2 max|v|) - emax(elem)); each v / scale is rounded once in `rounding` and
    saturates to the largest normal; a NaN or infinite value makes its block's scale NaN and its
    elements +0 (core/scale.hpp quantize_mx_block). For a torch tensor, scales and elements are
    torch.uint8 tensors.

    >>> scales, elems, flags = bf16emu.quantize_mx(np.float32([1, 2, 3, 6]), "e2m1", block=4)
    >>> scales.tolist(), elems.tolist()  # scale 2^(2 - 2) = 1; e2m1 codes of 1, 2, 3, 6
    ([127], [2, 4, 5, 7])
    """
    bits, src, kind = to_bits(x, format, "x")
    name = _format_name(elem, "elem")
    if name not in _MX_ELEMENTS:
        raise ValueError(f"argument 'elem': '{elem}' is not an MX element format ({', '.join(_MX_ELEMENTS)})")
    opts = _options(rounding, tininess, nan, False, False, False, None, threads)
    scales, out, flags = _core.quantize_mx(bits, src, name, _block_size(block), opts)
    if kind.torch:
        torch = _torch()
        return torch.from_numpy(scales), torch.from_numpy(out), Flags(flags)
    return scales, out, Flags(flags)


def dequantize_mx(scales, elements, elem: str = "e2m1", *, block: int = 32):
    """The exact values scale * element as float64 (every product is exact in binary64); NaN
    where the block's scale is NaN (0xFF). Shapes as quantize_mx returns them (NumPy arrays or
    torch.uint8 tensors); the result is a float64 NumPy array.

    >>> bf16emu.dequantize_mx(np.uint8([128]), np.uint8([2, 4, 5, 7]), "e2m1", block=4)
    array([ 2.,  4.,  6., 12.])
    """
    name = _format_name(elem, "elem")
    if name not in _MX_ELEMENTS:
        raise ValueError(f"argument 'elem': '{elem}' is not an MX element format ({', '.join(_MX_ELEMENTS)})")
    k = _block_size(block)
    s = _cpu_tensor(scales, "scales").numpy() if _is_tensor(scales) else np.asarray(scales)
    e = _cpu_tensor(elements, "elements").numpy() if _is_tensor(elements) else np.asarray(elements)
    if s.dtype != np.uint8 or e.dtype != np.uint8:
        raise TypeError(f"arguments 'scales' and 'elements' must be uint8 arrays, got {s.dtype} and {e.dtype}")
    e = np.ascontiguousarray(e)
    _check_pattern(e, name, "elements")
    if e.ndim == 0 or s.shape != e.shape[:-1] + (e.shape[-1] // k,) or e.shape[-1] % k:
        raise ValueError(f"argument 'scales' of shape {s.shape} does not match elements of shape {e.shape} "
                         f"with block = {k}")
    values = convert(np.ascontiguousarray(e), "fp64", format=name)
    power = np.ldexp(1.0, s.astype(np.int64) - 127)
    out = values.reshape(e.shape[:-1] + (e.shape[-1] // k, k)) * power[..., None]
    out[s == 0xFF] = np.nan
    return out.reshape(e.shape)


from . import plot  # noqa: E402  (bf16emu.plot: pictures; imports matplotlib only when drawing)
