# Type stubs of the bf16emu package (docs/python.md). Arrays are NumPy arrays or torch tensors;
# results are of the input's kind.
import enum
import os
from typing import Any, Literal, Optional, Sequence, Tuple, TypeVar, Union, overload

import numpy as np
import numpy.typing as npt

__version__: str
MAX_THREADS: int
ROUNDING_DEFAULT: str

Array = Any  # a NumPy array (or anything np.asarray takes) or a torch.Tensor
A = TypeVar("A")

class Flags(enum.IntFlag):
    NONE = 0
    INVALID = 1
    DIVBYZERO = 2
    OVERFLOW = 4
    UNDERFLOW = 8
    INEXACT = 16

@overload
def convert(x: Array, to: str, *, format: Optional[str] = ..., rounding: str = ..., tininess: str = ...,
            nan: str = ..., ftz: bool = ..., daz: bool = ..., saturate: bool = ..., seed: Optional[int] = ...,
            threads: int = ..., out: Optional[Array] = ..., return_flags: Literal[False] = ...,
            legacy_tuple: Literal[False] = ...) -> Array: ...
@overload
def convert(x: Array, to: str, *, format: Optional[str] = ..., rounding: str = ..., tininess: str = ...,
            nan: str = ..., ftz: bool = ..., daz: bool = ..., saturate: bool = ..., seed: Optional[int] = ...,
            threads: int = ..., out: Optional[Array] = ..., return_flags: Literal[True],
            legacy_tuple: Literal[False] = ...) -> Tuple[Array, Array, Flags]: ...
@overload
def convert(x: Array, to: str, *, format: Optional[str] = ..., rounding: str = ..., tininess: str = ...,
            nan: str = ..., ftz: bool = ..., daz: bool = ..., saturate: bool = ..., seed: Optional[int] = ...,
            threads: int = ..., out: Optional[Array] = ..., return_flags: Literal[False] = ...,
            legacy_tuple: Literal[True]) -> Tuple[Array, Flags]: ...

@overload
def add(a: Array, b: Array, *, format: Optional[str] = ..., rounding: str = ..., tininess: str = ...,
        nan: str = ..., ftz: bool = ..., daz: bool = ..., saturate: bool = ..., seed: Optional[int] = ...,
        threads: int = ..., out: Optional[Array] = ..., return_flags: Literal[False] = ...,
        legacy_tuple: Literal[False] = ...) -> Array: ...
@overload
def add(a: Array, b: Array, *, format: Optional[str] = ..., rounding: str = ..., tininess: str = ...,
        nan: str = ..., ftz: bool = ..., daz: bool = ..., saturate: bool = ..., seed: Optional[int] = ...,
        threads: int = ..., out: Optional[Array] = ..., return_flags: Literal[True],
        legacy_tuple: Literal[False] = ...) -> Tuple[Array, Array, Flags]: ...
@overload
def add(a: Array, b: Array, *, format: Optional[str] = ..., rounding: str = ..., tininess: str = ...,
        nan: str = ..., ftz: bool = ..., daz: bool = ..., saturate: bool = ..., seed: Optional[int] = ...,
        threads: int = ..., out: Optional[Array] = ..., return_flags: Literal[False] = ...,
        legacy_tuple: Literal[True]) -> Tuple[Array, Flags]: ...

sub = add
mul = add
div = add

@overload
def fma(a: Array, b: Array, c: Array, *, format: Optional[str] = ..., rounding: str = ..., tininess: str = ...,
        nan: str = ..., ftz: bool = ..., daz: bool = ..., saturate: bool = ..., seed: Optional[int] = ...,
        threads: int = ..., out: Optional[Array] = ..., return_flags: Literal[False] = ...,
        legacy_tuple: Literal[False] = ...) -> Array: ...
@overload
def fma(a: Array, b: Array, c: Array, *, format: Optional[str] = ..., rounding: str = ..., tininess: str = ...,
        nan: str = ..., ftz: bool = ..., daz: bool = ..., saturate: bool = ..., seed: Optional[int] = ...,
        threads: int = ..., out: Optional[Array] = ..., return_flags: Literal[True],
        legacy_tuple: Literal[False] = ...) -> Tuple[Array, Array, Flags]: ...
@overload
def fma(a: Array, b: Array, c: Array, *, format: Optional[str] = ..., rounding: str = ..., tininess: str = ...,
        nan: str = ..., ftz: bool = ..., daz: bool = ..., saturate: bool = ..., seed: Optional[int] = ...,
        threads: int = ..., out: Optional[Array] = ..., return_flags: Literal[False] = ...,
        legacy_tuple: Literal[True]) -> Tuple[Array, Flags]: ...

@overload
def sqrt(a: Array, *, format: Optional[str] = ..., rounding: str = ..., tininess: str = ..., nan: str = ...,
         ftz: bool = ..., daz: bool = ..., saturate: bool = ..., seed: Optional[int] = ..., threads: int = ...,
         out: Optional[Array] = ..., return_flags: Literal[False] = ...,
         legacy_tuple: Literal[False] = ...) -> Array: ...
@overload
def sqrt(a: Array, *, format: Optional[str] = ..., rounding: str = ..., tininess: str = ..., nan: str = ...,
         ftz: bool = ..., daz: bool = ..., saturate: bool = ..., seed: Optional[int] = ..., threads: int = ...,
         out: Optional[Array] = ..., return_flags: Literal[True],
         legacy_tuple: Literal[False] = ...) -> Tuple[Array, Array, Flags]: ...
@overload
def sqrt(a: Array, *, format: Optional[str] = ..., rounding: str = ..., tininess: str = ..., nan: str = ...,
         ftz: bool = ..., daz: bool = ..., saturate: bool = ..., seed: Optional[int] = ..., threads: int = ...,
         out: Optional[Array] = ..., return_flags: Literal[False] = ...,
         legacy_tuple: Literal[True]) -> Tuple[Array, Flags]: ...

def to_bits(x: Array, format: Optional[str] = ..., arg: str = ...,
            format_arg: str = ...) -> Tuple[npt.NDArray[Any], str, Any]: ...
def from_bits(bits: npt.NDArray[Any], format: str, kind: Any = ...) -> Array: ...

def trace(op: str, *operands: Any, format: Optional[str] = ..., to: Optional[str] = ..., rounding: str = ...,
          tininess: str = ..., nan: str = ..., ftz: bool = ..., daz: bool = ..., saturate: bool = ...,
          seed: Optional[int] = ..., index: int = ...) -> dict: ...

class Comparison:
    format: str
    shape: Tuple[int, ...]
    count: int
    mismatches: int
    nan_mismatches: int
    ulp_histogram: dict
    worst: Optional[dict]
    first_mismatches: list
    def explain(self, index: Union[int, Sequence[int]]) -> dict: ...
    def plot(self, path: Optional[Union[str, os.PathLike]] = ..., *, shape: Optional[Tuple[int, int]] = ...,
             title: Optional[str] = ...) -> Any: ...  # a matplotlib Figure (bf16emu.plot.comparison)
    def as_dict(self) -> dict: ...

def compare(actual: Array, expected: Array, *, format: Optional[str] = ..., first: int = ...,
            op: Optional[str] = ..., inputs: Sequence[Array] = ..., input_format: Optional[str] = ...,
            rounding: str = ..., tininess: str = ..., nan: str = ..., ftz: bool = ..., daz: bool = ...,
            saturate: bool = ...) -> Comparison: ...

def gemm(a: Array, b: Array, c: Optional[Array] = ..., *, arch: str = ..., kind: Optional[str] = ...,
         a_format: Optional[str] = ..., c_format: Optional[str] = ..., trace: Optional[Tuple[int, int]] = ...,
         threads: int = ..., split_k: int = ..., slice: Optional[int] = ..., order: str = ...,
         partial_format: Optional[str] = ..., c_entry: str = ..., out_format: Optional[str] = ...,
         b_format: Optional[str] = ..., scale_a: Optional[Array] = ..., scale_b: Optional[Array] = ...,
         scale_format: Optional[str] = ..., scale_vec: Optional[int] = ..., zero_exp: Optional[str] = ...) -> Any: ...

class GemmExplanation:
    members: int
    sample: int
    shape: Tuple[int, ...]
    match: Optional[dict]
    matches: list
    ranking: list
    first_unexplained: Optional[Tuple[int, int]]
    mismatch: Optional[dict]
    def as_dict(self) -> dict: ...

def explain_gemm(a: Union[Array, str, "os.PathLike[str]"], b: Union[Array, str, "os.PathLike[str]"],
                 result: Union[Array, str, "os.PathLike[str]"], *, c: Union[None, Array, str, "os.PathLike[str]"] = ...,
                 a_format: Optional[str] = ..., c_format: Optional[str] = ..., result_format: Optional[str] = ...,
                 arch: Optional[str] = ..., max_split: int = ..., presets: bool = ..., ieee: bool = ...,
                 c_at_end: bool = ..., sample: int = ..., top: int = ..., threads: int = ...) -> GemmExplanation: ...
def mma(a: Array, b: Array, c: Optional[Array] = ..., *, arch: str = ..., kind: Optional[str] = ...,
        a_format: Optional[str] = ..., c_format: Optional[str] = ...,
        trace: Optional[Tuple[int, int]] = ..., b_format: Optional[str] = ..., scale_a: Optional[Array] = ...,
        scale_b: Optional[Array] = ..., scale_format: Optional[str] = ..., scale_vec: Optional[int] = ...,
        zero_exp: Optional[str] = ...) -> Any: ...

def attention(q: Array, k: Array, v: Array, *, policy: str = ..., variant: str = ..., beta: float = ...,
              causal: bool = ..., ledger: bool = ..., reference: bool = ..., block_m: int = ..., block_n: int = ...,
              format: Optional[str] = ..., threads: int = ..., sites: Union[None, str, dict] = ...,
              scale: Optional[float] = ..., tie_tol: float = ..., bwd_block_m: Optional[int] = ...,
              bwd_block_n: Optional[int] = ...) -> dict: ...
def attention_backward(q: Array, k: Array, v: Array, do: Array, *, backward: str = ..., **kwargs: Any) -> dict: ...

def quantize_mx(x: Array, elem: str = ..., *, block: int = ..., format: Optional[str] = ..., rounding: str = ...,
                tininess: str = ..., nan: str = ..., threads: int = ...) -> Tuple[Array, Array, Flags]: ...
def dequantize_mx(scales: Array, elements: Array, elem: str = ..., *, block: int = ...) -> npt.NDArray[np.float64]: ...

class FormatInfo:
    name: str
    bits: int
    storage_bits: int
    exponent_bits: int
    mantissa_bits: int
    precision: int
    bias: int
    emin: int
    emax: int
    max: float
    min: float
    tiny: float
    smallest_normal: float
    smallest_subnormal: float
    eps: float
    has_inf: bool
    has_nan: bool
    values: Optional[npt.NDArray[np.float64]]
    grid: Optional[npt.NDArray[np.float64]]
    # issue 44: from the C++ core (_core.format_info), as `bf16emu finfo --json`
    fields: str  # "fp:e=..,m=..,bias=..,enc=.."
    encoding: str  # ieee, fn, finite, fnuz, p3109, e8m0
    signed: bool
    has_neg_zero: bool
    subnormals: bool
    saturates: bool
    max_bits: int
    inf_bits: Optional[int]
    nan_bits: Optional[int]
    nan_count: int
    compile_time: bool
    bulk_kernel: bool
    def __init__(self, name: str) -> None: ...

# fmt: a name (bf16, e4m3, e4m3fnuz, e5m2fnuz, e4m3b11fnuz, e3m4, e4m3ieee, e8m0, p3109:p1 ..
# p3109:p7, ...) or a field list "fp:e=E,m=M[,bias=B][,enc=...][,sub=0|1][,sat=0|1]"
# (docs/formats.md). rounding= everywhere also takes nearest_zero (rnz), stochastic_equal (sr_eq),
# stochastic_k (sr_k) and "sr_k:K" (K random bits, 1..32; docs/rounding.md).
def finfo(fmt: str) -> FormatInfo: ...

from . import plot as plot  # pictures (matplotlib, optional): docs/python.md "Pictures"
