"""Tensor comparisons for the runtime checks, chunked so that comparing two 7.5 GB tensors needs only a
few hundred MB of scratch memory. Device-agnostic: the CPU tests exercise exactly this code.

`compare(new, ref, atol, rtol)` has `torch.allclose(new, ref, atol, rtol, equal_nan=True)` semantics
(|new - ref| <= atol + rtol * |ref| everywhere; NaN only where the other side is NaN too) and also reports
max |Δ|, the max relative error (over elements whose |ref| >= atol, where a relative error means
something), and the worst "excess" max(|Δ| - atol - rtol * |ref|), which is <= 0 exactly when it passes.
It computes in the wider of the two dtypes and in float32 at the least, so comparing two float16 or bfloat16
tensors adds no rounding of its own.

The rounding noise of a dtype (`unit_roundoff`, `rounding_excess`): the validator's rules were calibrated on
float32 results, so their constants (the arbiters' bounds, the separability test, the jitter of
stages/sensitivity.py) hold float32's rounding. A run at float16 or bfloat16 (--precision, --autocast) rounds each
stored result by its dtype's unit roundoff u = 2^-p (p significant bits: float32 2^-24, float16 2^-11, bfloat16
2^-8) instead. What a rule allows for rounding grows by the excess u(dtype) - u(float32) per rounding it allows,
times the size of the values: zero at float32 and wider, so a float32 run is judged exactly by its constants, and
one noise model serves every dtype.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import torch

CHUNK = 1 << 25   # elements per chunk
_INT_OF_SIZE = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


@dataclass
class Comparison:
    numel: int
    max_abs: float
    max_rel: float
    max_excess: float
    outside: int          # elements outside the tolerance
    nan_mismatch: int     # NaN on one side only
    worst_index: int | None
    worst_new: float | None
    worst_ref: float | None
    atol: float
    rtol: float

    @property
    def allclose(self) -> bool:
        return self.outside == 0 and self.nan_mismatch == 0

    def summary(self) -> str:
        text = f"max|Δ| {self.max_abs:.3g}, max rel {self.max_rel:.3g}, excess {self.max_excess:+.3g}"
        if self.outside:
            text += (f"; {self.outside}/{self.numel} outside atol={self.atol:g} rtol={self.rtol:g}"
                     f" (worst at flat index {self.worst_index}: new {self.worst_new!r} vs ref {self.worst_ref!r})")
        if self.nan_mismatch:
            text += f"; {self.nan_mismatch} NaN mismatches"
        return text

    def as_dict(self) -> dict:
        return {**{k: _json_float(v) for k, v in asdict(self).items()}, "allclose": self.allclose}


def _json_float(v):
    if isinstance(v, float) and not math.isfinite(v):
        return str(v)
    return v


def _flat(t: torch.Tensor) -> torch.Tensor:
    return t.reshape(-1)


def compare(new: torch.Tensor, ref: torch.Tensor, atol: float, rtol: float, chunk: int = CHUNK) -> Comparison:
    """Elementwise comparison of two tensors of one shape (dtypes may differ: computed in the wider one)."""
    if new.shape != ref.shape:
        raise ValueError(f"shapes differ: {tuple(new.shape)} vs {tuple(ref.shape)}")
    dtype = torch.promote_types(new.dtype, ref.dtype)
    dtype = torch.promote_types(dtype, torch.float32) if dtype.is_floating_point else torch.float64
    n_flat, r_flat = _flat(new), _flat(ref)
    numel = n_flat.numel()
    dev = new.device
    max_abs = torch.zeros((), dtype=dtype, device=dev)
    max_rel = torch.zeros((), dtype=dtype, device=dev)
    outside = torch.zeros((), dtype=torch.int64, device=dev)
    nan_mismatch = torch.zeros((), dtype=torch.int64, device=dev)
    worst = []   # per chunk: (max excess, flat index)
    for start in range(0, numel, chunk):
        n = n_flat[start:start + chunk].to(dtype)
        r = r_flat[start:start + chunk].to(dtype)
        nan_n, nan_r = n.isnan(), r.isnan()
        one_nan = nan_n ^ nan_r
        nan_mismatch += one_nan.sum()
        d = (n - r).abs()
        d = torch.where((n == r) | nan_n | nan_r, torch.zeros((), dtype=dtype, device=dev), d)
        abs_r = r.abs()
        excess = d - (atol + rtol * abs_r)
        excess = torch.where(d.isinf(), torch.full((), math.inf, dtype=dtype, device=dev), excess)
        excess = torch.where(one_nan, torch.full((), math.inf, dtype=dtype, device=dev), excess)
        excess = torch.where(nan_n & nan_r, torch.full((), -math.inf, dtype=dtype, device=dev), excess)
        outside += ((excess > 0) & ~one_nan).sum()
        max_abs = torch.maximum(max_abs, d.max())
        rel = torch.where(abs_r >= max(atol, 1e-30), d / (abs_r + 1e-12), torch.zeros((), dtype=dtype, device=dev))
        max_rel = torch.maximum(max_rel, rel.max())
        at = excess.argmax()
        worst.append((excess[at], at + start))
        del n, r, d, abs_r, excess, rel
    if not worst:
        return Comparison(0, 0.0, 0.0, -math.inf, 0, 0, None, None, None, atol, rtol)
    excesses = torch.stack([w[0] for w in worst])
    best_chunk = int(excesses.argmax())
    index = int(worst[best_chunk][1])
    return Comparison(numel=numel, max_abs=float(max_abs), max_rel=float(max_rel),
                      max_excess=float(excesses[best_chunk]), outside=int(outside),
                      nan_mismatch=int(nan_mismatch), worst_index=index,
                      worst_new=float(n_flat[index]), worst_ref=float(r_flat[index]), atol=atol, rtol=rtol)


def unit_roundoff(dtype: torch.dtype) -> float:
    """u = 2^-p of a floating dtype with p significant bits (half of torch.finfo's eps): the largest relative
    error of one rounding to it. float32 2^-24, float16 2^-11, bfloat16 2^-8, float64 2^-53."""
    return torch.finfo(dtype).eps / 2


def rounding_excess(dtype: torch.dtype) -> float:
    """How much more one rounding to `dtype` may move a value, relative to its size, than a rounding to float32:
    u(dtype) - u(float32); 0 for float32 and wider dtypes."""
    return max(0.0, unit_roundoff(dtype) - unit_roundoff(torch.float32))


def rounding_allowance(dtype: torch.dtype, magnitude: float, roundings: float) -> float:
    """What a float32-calibrated bound adds for `roundings` roundings to `dtype` of values up to `magnitude`."""
    return roundings * rounding_excess(dtype) * magnitude


def max_magnitude(t: torch.Tensor, chunk: int = CHUNK) -> float:
    """The largest |element| that is a finite number (0.0 where there is none)."""
    flat = _flat(t)
    largest = 0.0
    for start in range(0, flat.numel(), chunk):
        part = flat[start:start + chunk].abs()
        largest = max(largest, float(torch.where(part.isfinite(), part, torch.zeros((), dtype=part.dtype,
                                                                                   device=part.device)).max()))
    return largest


def squared_difference(new: torch.Tensor, ref: torch.Tensor, chunk: int = CHUNK) -> tuple[float, int]:
    """(sum of (new - ref)^2 in float64, how many terms) over the elements where the difference is a number."""
    n_flat, r_flat = _flat(new), _flat(ref)
    total, count = 0.0, 0
    for start in range(0, n_flat.numel(), chunk):
        d = n_flat[start:start + chunk].to(torch.float64) - r_flat[start:start + chunk].to(torch.float64)
        d = d[d.isfinite()]
        total += float(d.square().sum())
        count += d.numel()
    return total, count


def bitwise_equal(a: torch.Tensor, b: torch.Tensor, chunk: int = CHUNK) -> bool:
    """Same shape, same dtype, same bits (NaN payloads included)."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    as_int = _INT_OF_SIZE[a.element_size()]
    a_flat, b_flat = _flat(a.view(as_int)), _flat(b.view(as_int))
    return all(torch.equal(a_flat[i:i + chunk], b_flat[i:i + chunk]) for i in range(0, a_flat.numel(), chunk))


def count_nan(t: torch.Tensor, chunk: int = CHUNK) -> int:
    """How many elements are NaN (0 for non-floating tensors)."""
    if not (t.is_floating_point() or t.is_complex()):
        return 0
    flat = _flat(t)
    return int(sum(int(flat[i:i + chunk].isnan().sum()) for i in range(0, flat.numel(), chunk)))


def storage_span(t: torch.Tensor) -> tuple[int, int]:
    storage = t.untyped_storage()
    return storage.data_ptr(), storage.data_ptr() + storage.nbytes()


def shares_memory(a: torch.Tensor, b: torch.Tensor) -> bool:
    """True if the two tensors' storages overlap (one is a view of, or aliases, the other)."""
    if a is b:
        return True
    a0, a1 = storage_span(a)
    b0, b1 = storage_span(b)
    return a0 < b1 and b0 < a1 and a1 > a0 and b1 > b0


def tensor_meta(t) -> dict:
    if not isinstance(t, torch.Tensor):
        return {"type": type(t).__name__}
    return {"shape": list(t.shape), "dtype": str(t.dtype).replace("torch.", ""), "device": str(t.device),
            "contiguous": t.is_contiguous()}
