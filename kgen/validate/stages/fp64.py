"""Float64 as the arbiter: the whole-batch float64 gradient decides a gradient that misses the reference,
and a float64 copy of the reference cross-checks outputs and gradients on a slice of the batch."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch

from kgen.validate.checks import Check, failed, skipped
from kgen.validate.context import Context, outputs_of, sliced, tensors_of
from kgen.validate.numerics import compare, tensor_meta
from kgen.validate.stages.calls import forward_backward, upstream_for
from kgen.validate.stages.sensitivity import rejudge_failing

FP64_MAX_SAMPLES = 2


# ---- float64 arbitration of gradients -----------------------------------------------------------------
# A parameter gradient sums over the whole batch (for L1-35, 29 M terms per GroupNorm weight), and the
# reference's own float32 sum can be further from the truth than the tolerance; and where the reference
# runs its convolutions in TF32 (PyTorch's default for cuDNN), a float-rounding difference in the
# gradient reaching the convolution is amplified to ~1e-3 in its input and weight gradients. Either way
# "allclose to the reference" can fail for a solution that is as accurate as the reference, or more.
# So when a gradient misses the reference, the float64 gradient of the whole batch decides, computed
# with a float64 copy of the reference over chunks of the batch (the models are per-sample independent;
# checked by comparing each chunk's float64 output with the float32 reference's), or over the whole batch
# at once where the samples interact (L2-75 broadcasts its output over a new first dim). The rule is the one of
# the float64 cross-check (check_vs_fp64): within tolerance of float64, or no more than twice as far
# from it as the reference (plus atol).

@dataclass
class Distance:
    """How far one float32 gradient is from the float64 one, accumulated over batch chunks."""
    max_abs: float = 0.0
    allclose: bool = True
    nan_mismatch: int = 0

    def add(self, cmp) -> None:
        self.max_abs = max(self.max_abs, cmp.max_abs)
        self.allclose = self.allclose and cmp.allclose
        self.nan_mismatch += cmp.nan_mismatch


def fp64_arbiter(ctx: Context, inputs: list, upstream: Callable, keys: list[str], new_grads: dict,
                 ref_grads: dict) -> dict | None:
    """{key: (solution's Distance, reference's Distance)} from float64, or None if the float64 gradient
    cannot be had: no batched input, or samples that interact (the batch cannot be chunked) and the whole
    batch in float64 does not fit on the device."""
    leaves = [i for i, x in enumerate(inputs) if isinstance(x, torch.Tensor) and x.is_floating_point()]
    if not leaves or inputs[leaves[0]].dim() == 0:
        return None
    batch = inputs[leaves[0]].shape[0]
    with torch.no_grad():
        full_out = tensors_of(ctx.run(ctx.ref_model, inputs, same_draws=True))
    grads_out = upstream(full_out)
    chunk = max(1, fp64_samples(ctx, batch) * 4)
    distances = _fp64_distances(ctx, inputs, leaves, full_out, grads_out, keys, new_grads, ref_grads, chunk)
    if distances is None and chunk < batch:   # not separable by chunks: the whole batch at once, if it fits
        ctx.free()
        oom = getattr(torch.cuda, "OutOfMemoryError", RuntimeError)
        try:
            distances = _fp64_distances(ctx, inputs, leaves, full_out, grads_out, keys, new_grads, ref_grads,
                                        batch)
        except oom:
            distances = None
    ctx.free()
    return distances


def chunk_bounds(batch: int, chunk: int) -> list[tuple[int, int]]:
    """[start, stop) of each chunk of the batch; a lone last sample joins the chunk before it, since a model
    may refuse a batch of one that it takes in a larger batch (a GroupNorm with one value per group in training,
    as nn.BatchNorm with one value per channel)."""
    bounds = [(start, min(start + chunk, batch)) for start in range(0, batch, chunk)]
    if len(bounds) > 1 and bounds[-1][1] - bounds[-1][0] == 1:
        bounds[-2:] = [(bounds[-2][0], batch)]
    return bounds


def _fp64_distances(ctx: Context, inputs: list, leaves: list[int], full_out: list, grads_out: list,
                    keys: list[str], new_grads: dict, ref_grads: dict, chunk: int) -> dict | None:
    """fp64_arbiter's work over chunks of `chunk` samples; None as soon as a chunk's float64 output is not
    the float32 reference's slice (the samples interact)."""
    batch = inputs[leaves[0]].shape[0]
    ref64 = ctx.construct(ctx.ref_mod.Model).double()
    ref64.load_state_dict(ctx.ref_model.state_dict())
    params = dict(ref64.named_parameters())
    param_keys = [k for k in keys if k in params]
    input_keys = {f"input[{n}]": i for n, i in enumerate(leaves) if f"input[{n}]" in keys}
    sums = {k: torch.zeros_like(params[k]) for k in param_keys}
    distances = {k: (Distance(), Distance()) for k in keys}
    for start, stop in chunk_bounds(batch, chunk):
        part = [x[start:stop].double().requires_grad_(i in input_keys.values()) if i in leaves else x
                for i, x in enumerate(inputs)]
        try:
            outs = tensors_of(outputs_of(ref64(*part)))
        except (RuntimeError, ValueError):   # the reference refuses a part of the batch: not separable
            return None
        whole = (start, stop) == (0, batch)
        for o, f in zip(outs, full_out):
            if f.dim() == 0 and not whole:   # one number of the whole batch (a full sum): no slice of it
                return None
            part_of_f = f if whole else f[start:stop]   # all of f when the chunk is the batch (whatever its dims)
            if o.shape != part_of_f.shape or not torch.allclose(o, part_of_f.double(), atol=1e-2, rtol=1e-2):
                return None
        wrt = [params[k] for k in param_keys] + [part[i] for i in input_keys.values()]
        upstream64 = [(g if whole else g[start:stop]).double() for g in grads_out]
        gs = torch.autograd.grad(outs, wrt, upstream64, allow_unused=True)
        for key, g in zip(param_keys, gs):
            if g is not None:
                sums[key] += g
        for key, g in zip(input_keys, gs[len(param_keys):]):
            exact = torch.zeros_like(part[input_keys[key]]) if g is None else g
            for grads, distance in zip((new_grads, ref_grads), distances[key]):
                distance.add(compare(grads[key][start:stop], exact, ctx.atol, ctx.rtol))
        del part, outs, gs, upstream64
    for key in param_keys:
        for grads, distance in zip((new_grads, ref_grads), distances[key]):
            distance.add(compare(grads[key], sums[key], ctx.atol, ctx.rtol))
    return distances


def arbitrate(check: Check, key: str, distances: dict | None, atol: float) -> Check:
    if distances is None:
        check.detail += "; no float64 arbiter (the batch is not separable and does not fit whole)"
        return check
    new, ref = distances[key]
    bound = 2 * ref.max_abs + atol
    ok = new.nan_mismatch == 0 and (new.allclose or new.max_abs <= bound)
    detail = (f"{check.detail}; float64 arbiter (whole batch): solution max|Δ| {new.max_abs:.3g}, "
              f"reference {ref.max_abs:.3g}, bound 2×ref+atol {bound:.3g} -> "
              + ("as accurate as the reference" if ok else "less accurate than the reference"))
    return Check(check.name, ok, detail, {**check.data, "arbiter": {
        "solution_vs_fp64_max_abs": new.max_abs, "reference_vs_fp64_max_abs": ref.max_abs, "bound": bound}})


def fp64_samples(ctx: Context, batch: int) -> int:
    """How many samples of the batch to run in float64 (at most 2; fewer if the device is short)."""
    k = min(batch, FP64_MAX_SAMPLES)
    if ctx.device.type != "cuda":
        return k
    per_sample = sum(8 * _numel(s.shape) // max(s.shape[0], 1) for s in ctx.specs if s.is_tensor and s.shape)
    free, _ = torch.cuda.mem_get_info(ctx.device)
    while k > 1 and 24 * per_sample * k > 0.8 * free:   # inputs, outputs, gradients of three models
        k -= 1
    return k


def _numel(shape) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def stage_fp64(ctx: Context) -> None:
    backward = ctx.config.get("backward", True)
    tensor_specs = [s for s in ctx.specs if s.is_tensor and s.dtype.is_floating_point and s.shape]
    if not tensor_specs:
        ctx.add(skipped("fp64", "no floating-point tensor input"))
        return
    batch = tensor_specs[0].shape[0]
    k = fp64_samples(ctx, batch)
    specs = sliced(ctx.specs, batch, k)
    seed = ctx.seed + 99
    ref64 = ctx.construct(ctx.ref_mod.Model).double()
    ref64.load_state_dict(ctx.ref_model.state_dict())
    upstream = upstream_for(ctx, seed + 1)
    up64 = upstream_for(ctx, seed + 1, draw_dtype=torch.float32)   # the same draws, cast to float64
    x32 = ctx.inputs("rand", seed, specs)
    x64 = [x.double() if isinstance(x, torch.Tensor) and x.is_floating_point() else x for x in x32]
    out64, grads64 = forward_backward(ctx, ref64, x64, up64, backward)
    del ref64, x64
    out_ref, grads_ref = forward_backward(ctx, ctx.ref_model, x32, upstream, backward)
    out_new, grads_new = forward_backward(ctx, ctx.new_model, x32, upstream, backward)
    label = f"fp64 ({k} of {batch} samples)"
    for i, (n, r, e) in enumerate(zip(out_new, out_ref, out64)):
        if not isinstance(e, torch.Tensor):
            continue
        suffix = f" output[{i}]" if len(out64) > 1 else ""
        ctx.add(check_vs_fp64(f"{label} forward{suffix}", n, r, e, ctx.atol, ctx.rtol))
    comparable = len(out_new) == len(out64) and all(
        isinstance(n, torch.Tensor) and n.shape == e.shape for n, e in zip(out_new, out64))
    if backward and not comparable:
        ctx.add(skipped(f"{label} gradients", "outputs not comparable"))
    elif backward and grads64 is not None and grads_ref is not None and grads_new is not None:
        checks = {}
        for key, exact in grads64.items():
            n, r = grads_new.get(key), grads_ref.get(key)
            if exact is None or n is None or r is None:
                continue   # None-ness is judged in the trials
            checks[key] = check_vs_fp64(f"{label} grad {key}", n, r, exact, ctx.atol, ctx.rtol)
        # a kink crossed in the slice: the reference's rounding sensitivity decides (sensitivity.py)
        for check in rejudge_failing(ctx, x32, upstream, checks, grads_new, grads_ref).values():
            ctx.add(check)


def check_vs_fp64(name: str, new, ref, exact, atol: float, rtol: float) -> Check:
    """Pass if the solution is within tolerance of float64, or no more than twice as far from it as the
    reference is (plus atol): a TF32 reference is itself ~3e-3 away from float64."""
    if not isinstance(new, torch.Tensor) or new.shape != exact.shape:
        return failed(name, f"output {tensor_meta(new)} vs float64 reference {tuple(exact.shape)}")
    new_cmp = compare(new, exact, atol, rtol)
    ref_cmp = compare(ref, exact, atol, rtol)
    bound = 2 * ref_cmp.max_abs + atol
    ok = new_cmp.nan_mismatch == 0 and (new_cmp.allclose or new_cmp.max_abs <= bound)
    detail = (f"solution vs fp64 max|Δ| {new_cmp.max_abs:.3g} (rel {new_cmp.max_rel:.3g}), reference vs fp64 "
              f"{ref_cmp.max_abs:.3g} (rel {ref_cmp.max_rel:.3g}); bound 2×ref+atol {bound:.3g}")
    if new_cmp.nan_mismatch:
        detail += f"; {new_cmp.nan_mismatch} NaN mismatches"
    return Check(name, ok, detail, {"solution_vs_fp64": new_cmp.as_dict(), "reference_vs_fp64": ref_cmp.as_dict(),
                                    "bound": bound})
