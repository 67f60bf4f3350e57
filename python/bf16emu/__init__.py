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

from . import _core
from ._args import INT_MAX, MAX_THREADS, ROUNDING_DEFAULT, Flags  # noqa: F401 (public constants)
from ._arith import add, convert, div, fma, mul, sqrt, sub, trace
from ._attention import attention, attention_backward
from ._bits import from_bits, to_bits
from ._compare import Comparison, compare
from ._formats import FormatInfo, finfo
from ._gemm import GemmExplanation, explain_gemm, gemm, mma
from ._mx import dequantize_mx, quantize_mx

# The package by concern: _args (argument checks), _bits (arrays and tensors <-> bit patterns),
# _arith, _compare, _gemm, _attention, _mx, _formats (format facts from the C++ core);
# bf16emu.plot draws, bf16emu.torch is the PyTorch layer (imported on request: `import bf16emu`
# needs only NumPy).

__all__ = [
    "Flags", "convert", "add", "sub", "mul", "div", "fma", "sqrt", "trace", "to_bits", "from_bits",
    "compare", "Comparison", "mma", "gemm", "attention", "attention_backward", "quantize_mx", "dequantize_mx",
    "finfo", "FormatInfo", "__version__", "explain_gemm", "GemmExplanation",
]

__version__: str = _core.__version__

from . import plot  # noqa: E402,F401  (bf16emu.plot: pictures; imports matplotlib only when drawing)
