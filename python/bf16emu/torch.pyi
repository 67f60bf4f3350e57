# Type stubs of bf16emu.torch (docs/python.md, "Inside a training step").
from typing import Any, Dict, List, Literal, Optional, Tuple, Union

import torch
from torch import Tensor

def attention(q: Tensor, k: Tensor, v: Tensor, *, policy: str, variant: str = ..., beta: float = ...,
              causal: bool = ..., scale: Optional[float] = ..., sites: Union[None, str, Dict[str, str]] = ...,
              backward: Optional[Literal["tiled", "reference", "authors", "authors:promote"]] = ...,
              ledger: Union[bool, Literal["forward"]] = ..., block_m: int = ..., block_n: int = ...,
              threads: int = ..., tie_tol: float = ..., bwd_block_m: Optional[int] = ...,
              bwd_block_n: Optional[int] = ...) -> Union[Tensor, Tuple[Tensor, dict]]: ...
def matmul(a: Tensor, b: Tensor, *, arch: str = ..., kind: Optional[str] = ..., format: str = ...,
           rounding: str = ..., seed: Optional[int] = ..., output: Optional[str] = ...,
           threads: int = ...) -> Tensor: ...
def linear(x: Tensor, weight: Tensor, bias: Optional[Tensor] = ..., *, arch: str = ..., kind: Optional[str] = ...,
           format: str = ..., rounding: str = ..., seed: Optional[int] = ..., output: Optional[str] = ...,
           threads: int = ...) -> Tensor: ...
def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor, attn_mask: Optional[Tensor] = ...,
                                 dropout_p: float = ..., is_causal: bool = ...,
                                 scale: Optional[float] = ...) -> Tensor: ...

class Emulated:
    model: torch.nn.Module
    ledgers: List[dict]
    def restore(self) -> None: ...
    def __enter__(self) -> torch.nn.Module: ...
    def __exit__(self, *exc: Any) -> None: ...
    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...
    def __getattr__(self, name: str) -> Any: ...

def emulate(model: torch.nn.Module, attention: Union[None, str, Dict[str, Any]] = ...,
            linear: Union[None, str, Dict[str, Any]] = ..., *,
            ledger: Union[bool, Literal["forward"]] = ...) -> Emulated: ...
