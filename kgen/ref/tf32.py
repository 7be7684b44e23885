"""Whether float32 convolutions and matmuls round their inputs to TF32 at this moment: what decides, at each call,
whether a region that such ops read is PyTorch's GroupNorm to the bit (plan_faithful.py). `_tf32` is written once,
here: the emitted files carry its source as it stands (solution.py.j2, `tf32_source`), and kgen's own process asks it
too (`kgen tune` prunes the candidates that differ only where a region would not be faithful)."""
from __future__ import annotations

import inspect

import torch


def _tf32(op):
    """Whether float32 `op`s ("matmul": cuBLAS, "conv": cuDNN) round their inputs now (TF32, or bfloat16 under
    "medium"): a region that only such ops read is PyTorch's GroupNorm to the bit at such calls alone. Read from the
    precision settings where this PyTorch has them (the op's own, else its backend's, else the global one, whichever
    spelling set them: allow_tf32, set_float32_matmul_precision, fp32_precision; all "none": off), else from
    allow_tf32 (PyTorch refuses to read that legacy flag once both spellings were used)."""
    if op == "conv":
        owners = (getattr(torch.backends.cudnn, "conv", None), torch.backends.cudnn, torch.backends)
    else:
        owners = (torch.backends.cuda.matmul, torch.backends)
    precisions = [getattr(owner, "fp32_precision", None) for owner in owners]
    if precisions[0] is None:
        return torch.backends.cudnn.allow_tf32 if op == "conv" else torch.backends.cuda.matmul.allow_tf32
    for precision in precisions:
        if precision not in (None, "none"):
            return precision != "ieee"
    return False


tf32_now = _tf32


def tf32_source() -> str:
    """`_tf32` as the emitted files carry it."""
    return inspect.getsource(_tf32).rstrip("\n")


def faithful_now(step) -> bool:
    """Whether the region `step` (a RegionStep) runs PyTorch's GroupNorm to the bit at a call made now: at every call
    where nothing switches it (an attention reads it, --faithful all), else where an op kind that reads it rounds to
    TF32 now."""
    if not step.faithful:
        return False
    return not step.faithful_switch or any(tf32_now(op) for op in step.faithful_switch)
