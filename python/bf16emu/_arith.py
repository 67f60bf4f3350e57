"""Element-wise arithmetic: convert, add, sub, mul, div, fma, sqrt, and trace (one rounding
shown step by step)."""

from __future__ import annotations

import numbers

import numpy as np

from . import _core
from ._args import Flags, ROUNDING_DEFAULT, _format_name, _int, _name, _options
from ._bits import _PATTERN_WIDTH, _WIDTH, _run, to_bits


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
