"""The tests' own reference for the dispatch mode (test_dispatch*.py): one product by a direct
bf16emu.gemm call, and a bit-for-bit comparison. Written apart from the mode, never calling it."""
import numpy as np
import torch

import bf16emu

PRESETS = ["sm80", "sm90", "sm100"]


def gemm2(a, b, gpu, dtype="bf16"):
    """a (M x K) @ b (K x N) by one direct bf16emu.gemm on the operands rounded to dtype: FP32 tensor."""
    a = a.detach().float().contiguous().numpy()
    b = b.detach().float().contiguous().numpy()
    if a.shape[0] == 0 or b.shape[1] == 0 or a.shape[1] == 0:
        return torch.zeros(a.shape[0], b.shape[1])
    d = bf16emu.gemm(np.asarray(bf16emu.convert(a, to=dtype)), np.asarray(bf16emu.convert(b, to=dtype)),
                     arch=gpu, a_format=dtype, threads=1)
    return torch.from_numpy(np.asarray(d, dtype=np.float32).copy())


def same_bits(x, y):
    """Same shape, same dtype, same bits (FP32 or the 16-bit formats)."""
    assert x.shape == y.shape and x.dtype == y.dtype, (x.shape, y.shape, x.dtype, y.dtype)
    view = torch.int32 if x.dtype == torch.float32 else torch.int16
    assert torch.equal(x.contiguous().view(view), y.contiguous().view(view))
