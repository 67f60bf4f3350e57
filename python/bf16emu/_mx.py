"""OCP Microscaling: quantize_mx and dequantize_mx."""

from __future__ import annotations

import numbers

import numpy as np

from . import _core
from ._args import Flags, ROUNDING_DEFAULT, _cpu_tensor, _format_name, _is_tensor, _options, _torch
from ._arith import convert
from ._bits import _check_pattern, to_bits


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
