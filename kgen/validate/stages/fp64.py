"""The float64 cross-check: a float64 copy of the reference, run on a slice of the batch, against which the
solution's outputs and gradients must be no farther than the reference's (the whole-batch float64 arbiter of
a disputed output or gradient is in arbiter.py). At --precision fp16|bf16 the copy holds the half-precision
parameters, widened, and runs on the half-precision inputs, widened; under --autocast it runs without
autocast: the truth the autocast runs approximate. Its upstream gradient is the one the reference gets,
widened. The bound allows for the run's rounding as arbiter.py's does (numerics.py's noise model)."""
from __future__ import annotations

import torch

from kgen.validate.checks import Check, failed, skipped
from kgen.validate.context import Context, sliced, tensors_of
from kgen.validate.float64 import float64_reference
from kgen.validate.numerics import compare, max_magnitude, rounding_allowance, rounding_excess, tensor_meta
from kgen.validate.stages.calls import forward_backward, upstream_for, upstream_like
from kgen.validate.stages.sensitivity import rejudge_failing

BOUND_ROUNDINGS = 2   # roundings to the run's dtype beyond float32's that a float64 bound allows: one ulp

FP64_MAX_SAMPLES = 2


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
    seed = ctx.seed + 99
    upstream = upstream_for(ctx, seed + 1)
    for k in dict.fromkeys((fp64_samples(ctx, batch), batch)):
        x32 = ctx.inputs("rand", seed, sliced(ctx.specs, batch, k))
        try:
            out_ref, grads_ref = forward_backward(ctx, ctx.ref_model, x32, upstream, backward)
            break
        except (RuntimeError, ValueError, AssertionError):
            if k == batch:
                raise
            # the reference refuses a slice of its batch (its forward reads the batch size as a constant,
            # `x.reshape(3, 4, -1)`): the whole batch, as the trials ran it
            del x32
            ctx.free()
    ref64 = float64_reference(ctx)
    x64 = [x.double() if isinstance(x, torch.Tensor) and x.is_floating_point() else x for x in x32]
    up64 = upstream_like(upstream, tensors_of(out_ref))   # the reference's draws, in its outputs' dtypes, widened
    out64, grads64 = forward_backward(ctx, ref64, x64, up64, backward, autocast=False)
    del ref64, x64
    label = f"fp64 ({k} of {batch} samples)"
    try:
        out_new, grads_new = forward_backward(ctx, ctx.new_model, x32, upstream, backward)
    except AssertionError as error:
        if not str(error).startswith("kgen:") or k == batch:
            raise
        # an emitted file's shape guard (kgen/ref/concrete.py): the reference's Python read the batch size, and
        # the file holds to it; the whole-batch float64 arbiter still judges every disputed value
        ctx.add(skipped(label, f"the solution refuses a slice of the batch: {str(error).splitlines()[0][:200]}"))
        return

    for i, (n, r, e) in enumerate(zip(out_new, out_ref, out64)):
        if not isinstance(e, torch.Tensor):
            continue
        suffix = f" output[{i}]" if len(out64) > 1 else ""
        ctx.add(check_vs_fp64(f"{label} forward{suffix}", n, r, e, ctx.atol, ctx.rtol, ctx.arithmetic))
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
            checks[key] = check_vs_fp64(f"{label} grad {key}", n, r, exact, ctx.atol, ctx.rtol, ctx.arithmetic)
        # a kink crossed in the slice: the reference's rounding sensitivity decides (sensitivity.py)
        for check in rejudge_failing(ctx, x32, upstream, checks, grads_new, grads_ref).values():
            ctx.add(check)


def bound_words(dtype: torch.dtype) -> str:
    """How the float64 bound reads in a report at the run's arithmetic dtype."""
    return "2×ref+atol" + (f"+1 {str(dtype).replace('torch.', '')} ulp" if rounding_excess(dtype) else "")


def check_vs_fp64(name: str, new, ref, exact, atol: float, rtol: float, dtype: torch.dtype = torch.float32) -> Check:
    """Pass if the solution is within tolerance of float64, or no more than twice as far from it as the
    reference is (plus atol): a TF32 reference is itself ~3e-3 away from float64. At a run's `dtype` narrower
    than float32, plus one rounding of the largest value to it beyond float32's."""
    if not isinstance(new, torch.Tensor) or new.shape != exact.shape:
        return failed(name, f"output {tensor_meta(new)} vs float64 reference {tuple(exact.shape)}")
    new_cmp = compare(new, exact, atol, rtol)
    ref_cmp = compare(ref, exact, atol, rtol)
    allowance = rounding_allowance(dtype, max_magnitude(exact), BOUND_ROUNDINGS)
    bound = 2 * ref_cmp.max_abs + atol + allowance
    ok = new_cmp.nan_mismatch == 0 and (new_cmp.allclose or new_cmp.max_abs <= bound)
    detail = (f"solution vs fp64 max|Δ| {new_cmp.max_abs:.3g} (rel {new_cmp.max_rel:.3g}), reference vs fp64 "
              f"{ref_cmp.max_abs:.3g} (rel {ref_cmp.max_rel:.3g}); bound {bound_words(dtype)} {bound:.3g}")
    if new_cmp.nan_mismatch:
        detail += f"; {new_cmp.nan_mismatch} NaN mismatches"
    return Check(name, ok, detail, {"solution_vs_fp64": new_cmp.as_dict(), "reference_vs_fp64": ref_cmp.as_dict(),
                                    "bound": bound})
