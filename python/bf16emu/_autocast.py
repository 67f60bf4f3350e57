"""Autocast as a CUDA run has it, for bf16emu's ProductMode (issue 43 item 2).

The one table of the package: TABLE maps an aten op (the overload packet's name, as it reaches a
TorchDispatchMode in torch 1.13) to its class. Source of the autocast classes: PyTorch v1.13's
aten/src/ATen/autocast_mode.cpp, CUDA lists (`KERNEL(..., lower_precision_fp)`, `fp32`,
`fp32_set_opt_dtype`, `fp32_append_dtype`, `promote`). Which ops carry an AutocastCUDA kernel was
checked on Debian's torch 1.13.0a0 with torch._C._dispatch_get_registrations_for_dispatch_key(
"AutocastCUDA") (107 overloads, all registered from autocast_mode.cpp); the class of each comes
from v1.13's file and the matching "CUDA Ops that can autocast to float32" list of the torch 1.13
amp documentation. Autocast works above autograd, on composite names (softmax, layer_norm,
nll_loss, linear); the mode sees what they lower to (_softmax, native_layer_norm,
nll_loss_forward, addmm), so the table holds those names, and the backward ops of the fp32 ops
(a CUDA run computes them in FP32 because their forward ran in FP32).

Classes:
- "product": mm/bmm/addmm/baddbmm, emulated on the tensor-core preset, output in the low dtype.
- "lower_precision_fp (host)": the rest of autocast's lower-precision list (convolutions, mv,
  addmv, dot ...): not emulated; run on the host and reported.
- "fp32": floating inputs cast to FP32, computed by the host in FP32, output FP32. The forward
  fp32 ops (sum, exp, pow, ...) get this only outside a backward pass: autocast is off in the
  backward, where they run in their inputs' type ("elementwise" rule below).
- "fp32_backward": backward ops of fp32 ops: FP32 in, FP32 out.
- "fp32, rounded back": norm: FP32 arithmetic, rounded once to the input's dtype (see TABLE).
- "elementwise": not an autocast list. PyTorch's CUDA kernels compute BFloat16/Half element-wise
  ops and reductions in float (at::opmath_type) and round once to the result dtype; the mode
  computes them in FP32 on the host and rounds once (RNE) to torch's promoted result dtype. The
  autocast "promote" class (addcmul, atan2, ...) is the same thing.
"""

from __future__ import annotations

import threading

import torch

LOW = {"bf16": torch.bfloat16, "fp16": torch.float16}

_W = lambda s: s.split()  # noqa: E731

# aten name -> class (autocast class in v1.13's CUDA lists, or "elementwise"). In-place
# variants (add_, mul_) are looked up without the trailing underscore (lookup()).
TABLE = {}
for _n in _W("mm bmm addmm baddbmm convolution convolution_backward"):  # convolution: _implicit_gemm
    TABLE[_n] = "product"
for _n in _W("""_convolution conv1d conv2d conv3d conv_tbc conv_transpose1d conv_transpose2d
conv_transpose3d cudnn_convolution cudnn_convolution_transpose prelu addmv addr mv addbmm chain_matmul
linalg_multi_dot _thnn_fused_lstm_cell _thnn_fused_gru_cell lstm_cell gru_cell rnn_tanh_cell rnn_relu_cell"""):
    TABLE[_n] = "lower_precision_fp (host)"
# fp32 / fp32_set_opt_dtype / fp32_append_dtype, at the names the mode sees.
for _n in _W("""acos asin cosh erfinv exp expm1 log log10 log2 log1p reciprocal rsqrt sinh tan pow softplus
native_layer_norm native_group_norm frobenius_norm nuclear_norm cosine_similarity poisson_nll_loss
cosine_embedding_loss nll_loss_forward nll_loss2d_forward hinge_embedding_loss kl_div l1_loss smooth_l1_loss
huber_loss mse_loss margin_ranking_loss multilabel_margin_loss_forward soft_margin_loss triplet_margin_loss
multi_margin_loss binary_cross_entropy_with_logits dist _pdist_forward _cdist_forward renorm logsumexp
prod _softmax _log_softmax cumprod cumsum sum"""):
    TABLE[_n] = "fp32"
# norm (fp32_append_dtype): torch 1.13's composite callers (frobenius_norm) assert that norm's
# result has the input's dtype, so the mode computes it in FP32 and rounds it back (a deviation:
# autocast's norm returns FP32).
for _n in _W("norm"):
    TABLE[_n] = "fp32, rounded back"
for _n in _W("""_softmax_backward_data _log_softmax_backward_data native_layer_norm_backward
native_group_norm_backward nll_loss_backward nll_loss2d_backward mse_loss_backward smooth_l1_loss_backward
huber_loss_backward softplus_backward soft_margin_loss_backward multi_margin_loss_backward
multilabel_margin_loss_backward _cdist_backward _pdist_backward cumprod_backward"""):
    TABLE[_n] = "fp32_backward"
for _n in _W("""addcdiv addcmul atan2 cross dot index_put scatter_add"""):
    TABLE[_n] = "promote"
for _n in _W("""add sub rsub mul div neg abs relu threshold threshold_backward gelu gelu_backward tanh
tanh_backward sigmoid sigmoid_backward silu silu_backward where masked_fill native_dropout
native_dropout_backward embedding embedding_dense_backward sqrt sin cos erf clamp clamp_min clamp_max
maximum minimum mean square exp2 leaky_relu leaky_relu_backward lerp sign bernoulli"""):
    TABLE[_n] = "elementwise"
# Ops whose fp32 policy is "fp32_set_opt_dtype": with an explicit dtype= autocast leaves them alone.
SET_OPT_DTYPE = frozenset(_W("prod _softmax _log_softmax cumprod cumsum sum"))


# The backward pass: autocast is off there. torch.autograd.backward/grad call
# Variable._execution_engine.run_backward; ProductMode wraps it while it is active.
_STATE = threading.local()


def in_backward() -> bool:
    return getattr(_STATE, "depth", 0) > 0


class _Engine:
    def __init__(self, inner):
        self.inner = inner

    def run_backward(self, *args, **kwargs):
        _STATE.depth = getattr(_STATE, "depth", 0) + 1
        try:
            return self.inner.run_backward(*args, **kwargs)
        finally:
            _STATE.depth -= 1

    def __getattr__(self, name):
        return getattr(self.inner, name)


def wrap_engine():
    """Marks backward passes; returns what unwrap_engine() needs."""
    from torch.autograd.variable import Variable
    prev = Variable._execution_engine
    Variable._execution_engine = _Engine(prev)
    return prev


def unwrap_engine(prev):
    from torch.autograd.variable import Variable
    Variable._execution_engine = prev


def lookup(name):
    """The class of aten op `name` (None: not in the table)."""
    return TABLE.get(name) or (TABLE.get(name[:-1]) if name.endswith("_") else None)


def _map(x, fn):
    if isinstance(x, torch.Tensor):
        return fn(x)
    if isinstance(x, (list, tuple)):
        return type(x)(_map(y, fn) for y in x)
    return x


def _tensors(x, out):
    if isinstance(x, torch.Tensor):
        out.append(x)
    elif isinstance(x, (list, tuple)):
        for y in x:
            _tensors(y, out)
    return out


def floating(args, kwargs):
    return [t for t in _tensors(list(args) + list(kwargs.values()), []) if t.is_floating_point()]


def result_dtype(ts):
    """torch's type promotion over floating tensors: dimensioned tensors first, 0-dim ones
    only when there are none (as torch.result_type ranks them)."""
    dims = [t.dtype for t in ts if t.dim() > 0] or [t.dtype for t in ts]
    d = dims[0]
    for x in dims[1:]:
        d = torch.promote_types(d, x)
    return d


def _fp32(t):
    return t.to(torch.float32) if t.is_floating_point() else t


def _call_fp32(func, args, kwargs):
    a = _map(list(args), _fp32)
    k = {key: _map(v, _fp32) for key, v in kwargs.items()}
    name = func.overloadpacket.__name__
    if name in ("_softmax_backward_data", "_log_softmax_backward_data"):
        a[3] = torch.float32  # input_dtype: the forward's input was cast to FP32
    if name in ("_softmax", "_log_softmax"):
        a[2] = False  # half_to_float: the input is FP32 already
    return a, k, func(*a, **k)


def run(cls, func, args, kwargs):
    """Runs func under class cls (not 'product'); returns (result, how it was handled)."""
    name = func.overloadpacket.__name__
    if cls == "fp32" and name in SET_OPT_DTYPE and kwargs.get("dtype") is not None:
        return func(*args, **kwargs), "explicit dtype: host"
    if cls == "fp32" and in_backward():
        cls = "elementwise"  # autocast is off in the backward
    if cls in ("fp32", "fp32_backward"):
        return _call_fp32(func, args, kwargs)[2], "fp32"
    # elementwise / promote / fp32, rounded back: FP32 arithmetic, one rounding to the promoted dtype.
    ts = floating(args, kwargs)
    dt = result_dtype(ts)
    a, k, out = _call_fp32(func, args, kwargs)
    if name.endswith("_") and isinstance(args[0], torch.Tensor):  # in-place: write back, rounded
        args[0].copy_(a[0])
        return args[0], "rounded"
    return _map(out, lambda t: t.to(dt) if t.is_floating_point() else t), "rounded"
