"""Argument checks shared by every function of the package: names, booleans, integers, seeds,
thread counts and the IEEE flags."""

from __future__ import annotations

import enum
import math
import numbers
import sys

import numpy as np

from . import _core


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


def _caller_level() -> int:
    """The warnings stacklevel of the first frame outside this package (the user's call)."""
    level, frame = 2, sys._getframe(2)
    while frame is not None and frame.f_globals.get("__name__", "").split(".")[0] == "bf16emu":
        frame, level = frame.f_back, level + 1
    return level


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
