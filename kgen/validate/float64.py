"""The float64 copy of the reference every float64 check runs (fp64.py's cross-check, arbiter.py's whole-batch
truth, dependence.py's noise measure): the reference's parameters and buffers widened, and its forward run with
every request for a narrower floating dtype kept at float64.

A reference may cast inside its forward: `x.float()` before a GroupNorm (guided diffusion's GroupNorm32,
`super().forward(x.float()).type(x.dtype)`), `.to(torch.float32)` between ops, `.half()`, a factory with
`dtype=torch.float32`. In a float64 copy such a cast either raises (a float32 input meets float64 parameters:
"expected parameter to have scalar type of Float") or silently rounds the truth to float32. Under KeepFloat64
the cast keeps its operand's float64 values: the copy computes the reference's arithmetic, every step in float64,
which is what the float64 truth means. Casts to integer or boolean types are untouched."""
from __future__ import annotations

import torch
from torch.overrides import TorchFunctionMode

NARROW = (torch.float32, torch.float16, torch.bfloat16)
# Tensor.type's string forms of the narrow types ('torch.FloatTensor', 'torch.cuda.HalfTensor', ...)
NARROW_TYPE_NAMES = ("FloatTensor", "HalfTensor", "BFloat16Tensor")
NARROWING_METHODS = (torch.Tensor.float, torch.Tensor.half, torch.Tensor.bfloat16)


def _wide(value):
    """float64 in place of a narrow floating dtype; anything else as it is."""
    return torch.float64 if isinstance(value, torch.dtype) and value in NARROW else value


def _narrow(value) -> bool:
    """A narrow floating dtype, or Tensor.type's string form of one ('torch.FloatTensor', 'torch.cuda.HalfTensor')."""
    return (isinstance(value, torch.dtype) and value in NARROW) or (isinstance(value, str)
                                                                   and value.endswith(NARROW_TYPE_NAMES))


def _to_argument(value) -> tuple:
    """Tensor.to's positional arguments after self: a narrow dtype widened; another tensor (`x.to(other)`) as its
    device and, where it is narrow floating, float64."""
    if isinstance(value, torch.Tensor):
        return (value.device, torch.float64 if value.dtype in NARROW else value.dtype)
    return (_wide(value),)


class KeepFloat64(TorchFunctionMode):
    """Every cast or factory call that asks for float32, float16 or bfloat16 gets float64 instead (a dtype given
    by keyword to any function: `torch.zeros(..., dtype=torch.float32)`, `x.sum(dtype=...)`)."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        if func in NARROWING_METHODS:
            return args[0].double()
        if func in (torch.Tensor.type, torch.Tensor.type_as) and len(args) > 1:
            target = args[1].dtype if func is torch.Tensor.type_as else args[1]
            if _narrow(target):
                return args[0].double()
        if func is torch.Tensor.to:
            args = args[:1] + tuple(part for a in args[1:] for part in _to_argument(a))
        if "dtype" in kwargs and func is not torch.Tensor.view:
            kwargs["dtype"] = _wide(kwargs["dtype"])
        return func(*args, **kwargs)


def float64_reference(ctx) -> torch.nn.Module:
    """A float64 copy of ctx's reference (same construction, its state and mode), its forward under KeepFloat64."""
    ref64 = ctx.construct(ctx.ref_mod.Model).double()
    ref64.load_state_dict(ctx.ref_model.state_dict())
    ref64.train(ctx.ref_model.training)
    forward = ref64.forward

    def forward_in_float64(*args, **kwargs):
        with KeepFloat64():
            return forward(*args, **kwargs)

    ref64.forward = forward_in_float64
    return ref64
