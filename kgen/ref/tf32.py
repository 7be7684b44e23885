"""Whether float32 convolutions and matmuls round their inputs to TF32 at this moment: what decides, at each call,
whether a region that such ops read is PyTorch's GroupNorm to the bit (plan_faithful.py). `_tf32` is written once,
here: the emitted files carry its source as it stands (solution.py.j2, `tf32_source`), and kgen's own process asks it
too (`kgen tune` prunes the candidates that differ only where a region would not be faithful)."""
from __future__ import annotations

import inspect

import torch


def _precision_keys():
    """The keys of PyTorch's float32 precision settings that a float32 conv / matmul obeys, its own first, then its
    backend's, then the global one (what torch.backends.cudnn.conv, .cudnn, .cuda.matmul and torch.backends read); None
    where this PyTorch has no such settings (allow_tf32 decides)."""
    if getattr(torch.backends.cudnn, "conv", None) is None or not hasattr(torch._C, "_get_fp32_precision_getter"):
        return None
    return {"conv": (("cuda", "conv"), ("cuda", "all"), ("generic", "all")),
            "matmul": (("cuda", "matmul"), ("generic", "all"))}


_PRECISION_KEYS = _precision_keys()


def _tf32(op):
    """Whether float32 `op`s ("matmul": cuBLAS, "conv": cuDNN) round their inputs now (TF32, or bfloat16 under
    "medium"): a region that only such ops read is PyTorch's GroupNorm to the bit at such calls alone. Read at each call
    from the precision settings where this PyTorch has them (the first that is not "none", whichever spelling set it:
    allow_tf32, set_float32_matmul_precision, fp32_precision; all "none": off), straight from PyTorch's C++ getter
    (a call costs ~1 us, the modules' properties ~5), else from allow_tf32."""
    if _PRECISION_KEYS is None:
        return torch.backends.cudnn.allow_tf32 if op == "conv" else torch.backends.cuda.matmul.allow_tf32
    for backend, name in _PRECISION_KEYS[op]:
        precision = torch._C._get_fp32_precision_getter(backend, name)
        if precision != "none":
            return precision != "ieee"
    return False


tf32_now = _tf32


def tf32_source() -> str:
    """`_tf32` as the emitted files carry it, with the settings' keys it reads (found once, at import)."""
    keys = inspect.getsource(_precision_keys).rstrip("\n")
    return f"{keys}\n\n\n_PRECISION_KEYS = _precision_keys()\n\n\n{inspect.getsource(_tf32).rstrip(chr(10))}"


def faithful_now(step) -> bool:
    """Whether the region `step` (a RegionStep) runs PyTorch's GroupNorm to the bit at a call made now: at every call
    where nothing switches it (an attention reads it, --faithful all), else where an op kind that reads it rounds to
    TF32 now."""
    if not step.faithful:
        return False
    return not step.faithful_switch or any(tf32_now(op) for op in step.faithful_switch)
