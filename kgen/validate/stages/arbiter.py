"""Float64 as the arbiter of a disputed output or gradient: one that misses the reference at the run's
tolerance is judged by its distance to the float64 truth over the WHOLE batch, against the reference's own.

Why "allclose to the reference" is not enough on its own:
  * a parameter gradient sums over the whole batch (for L1-35, 29 M terms per GroupNorm weight), and the
    reference's own float32 sum can be further from the truth than the tolerance;
  * where the reference runs a convolution in TF32 (PyTorch's default for cuDNN) after the solution's
    kernels, a one-ulp change in the convolution's input flips TF32 roundings: the output moves by ~1e-4 to
    1e-3 in a few hundred places and the gradients reaching the convolution by ~1e-3. torch.compile of such a
    reference misses 1e-4 against eager just the same.
Either way a solution as accurate as the reference, or more, can miss it.

The float64 truth comes from a float64 copy of the reference run over chunks of the batch (the models are
per-sample independent; checked by comparing each chunk's float64 output with the float32 reference's slice),
or over the whole batch at once where the samples interact (L2-75 broadcasts its output over a new first dim)
and it fits. The rules:

  gradient   within tolerance of float64, or its largest error no more than twice the reference's plus atol
             (then, if still disputed, the reference's rounding sensitivity decides: sensitivity.py)
  output     the same bound on the largest error, AND either no larger a root-mean-square error than the
             reference's (as accurate on the whole, or more: e.g. exact float32 where the reference is TF32),
             or a distance from the reference within the reference's own rounding noise (sensitivity.py:
             |Δ| and the count of elements out, against the reference jittered by a few ulps). The second
             half matters where the reference is itself far from float64 (TF32): an output 1e-3 off before
             the convolution stays inside twice the reference's largest error, yet moves every element, not
             a few hundred, and its root-mean-square error grows.

At float16 and bfloat16 the rules are the same, the truth being the float64 reference run on the very values
the run compares (--precision: the half-precision parameters and inputs, exactly widened), and every allowance
for rounding grows with the dtype's unit roundoff by numerics.py's noise model: the bound on the largest error
gains one rounding of the largest exact value beyond float32's (2 (u - u32) max|exact|, nothing at float32:
the solution's own result is rounded to the dtype too), the separability test's 1e-2 gains 16 of them, and
the rounding-sensitivity arbiter jitters each result by its own dtype's rounding (sensitivity.py).

Under --autocast the thing to match is the reference's own autocast run: the solution, its forwards under
the same autocast, is as accurate as that run when its distance to the float64 truth -- the float32
reference's parameters and inputs in float64, WITHOUT autocast, what the autocast run approximates -- is
within the bounds above of the reference's autocast run's own distance, the noise model at the autocast dtype
(what the run rounds to). A solution that keeps more in float32 than autocast does is closer to the truth and
passes; one that rounds more, or wrongly, is further and fails.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Iterator

import torch

from kgen.validate.checks import Check
from kgen.validate.context import Context, outputs_of, tensors_of
from kgen.validate.float64 import float64_reference
from kgen.validate.numerics import compare, max_magnitude, rounding_allowance, rounding_excess, squared_difference
from kgen.validate.stages.fp64 import BOUND_ROUNDINGS, bound_words, fp64_samples
from kgen.validate.stages.sensitivity import cleared_against, judge_by_sensitivity, model_outputs, rounding_sensitivity

SEPARABLE_TOL = 1e-2       # atol = rtol of "a chunk's float64 output is the reference's slice" at float32 (TF32)
SEPARABLE_ROUNDINGS = 16   # roundings to the run's dtype beyond float32's that the separability test also allows


def separable_tolerance(dtype: torch.dtype) -> float:
    """The separability test's atol = rtol at the run's arithmetic dtype: SEPARABLE_TOL at float32."""
    return SEPARABLE_TOL + SEPARABLE_ROUNDINGS * rounding_excess(dtype)


@dataclass
class Distance:
    """How far one tensor (of the run's dtype) is from the float64 one, accumulated over batch chunks."""
    max_abs: float = 0.0
    allclose: bool = True
    nan_mismatch: int = 0
    sum_sq: float = 0.0   # squared differences where both sides are numbers
    count: int = 0
    magnitude: float = 0.0   # the largest |float64 value|

    def add(self, new: torch.Tensor, exact: torch.Tensor, atol: float, rtol: float) -> None:
        cmp = compare(new, exact, atol, rtol)
        self.magnitude = max(self.magnitude, max_magnitude(exact))
        self.max_abs = max(self.max_abs, cmp.max_abs)
        self.allclose = self.allclose and cmp.allclose
        self.nan_mismatch += cmp.nan_mismatch
        sum_sq, count = squared_difference(new, exact)
        self.sum_sq += sum_sq
        self.count += count

    @property
    def rms(self) -> float:
        return math.sqrt(self.sum_sq / self.count) if self.count else 0.0


class NotSeparable(Exception):
    """A chunk of the batch does not give the float32 reference's slice: the samples interact."""


def chunk_bounds(batch: int, chunk: int) -> list[tuple[int, int]]:
    """[start, stop) of each chunk of the batch; a lone last sample joins the chunk before it, since a model
    may refuse a batch of one that it takes in a larger batch (a GroupNorm with one value per group in training,
    as nn.BatchNorm with one value per channel)."""
    bounds = [(start, min(start + chunk, batch)) for start in range(0, batch, chunk)]
    if len(bounds) > 1 and bounds[-1][1] - bounds[-1][0] == 1:
        bounds[-2:] = [(bounds[-2][0], batch)]
    return bounds


def float64_chunks(ref64, inputs: list, leaves: list[int], full_out: list, chunk: int,
                   grad_leaves: frozenset = frozenset(), tol: float = SEPARABLE_TOL
                   ) -> Iterator[tuple[int, int, list, list]]:
    """(start, stop, float64 inputs, float64 outputs) of `ref64` over chunks of the batch; the inputs in
    `grad_leaves` require grad. Raises NotSeparable as soon as a chunk's output is not, within atol = rtol = `tol`
    (separable_tolerance), the slice of the reference's `full_out` (float32, or the run's dtype)."""
    batch = inputs[leaves[0]].shape[0]
    for start, stop in chunk_bounds(batch, chunk):
        part = [x[start:stop].double().requires_grad_(i in grad_leaves) if i in leaves else x
                for i, x in enumerate(inputs)]
        try:
            outs = tensors_of(outputs_of(ref64(*part)))
        except (RuntimeError, ValueError):   # the reference refuses a part of the batch: not separable
            raise NotSeparable from None
        whole = (start, stop) == (0, batch)
        for o, f in zip(outs, full_out):
            if f.dim() == 0 and not whole:   # one number of the whole batch (a full sum): no slice of it
                raise NotSeparable
            part_of_f = f if whole else f[start:stop]   # all of f when the chunk is the batch (whatever its dims)
            if o.shape != part_of_f.shape:
                raise NotSeparable
            if o.is_floating_point() and not torch.allclose(o, part_of_f.double(), atol=tol, rtol=tol):
                raise NotSeparable   # (an integer output, an argmax, may move at a float64 tie: not a chunk's doing)
        yield start, stop, part, outs


def by_chunks(ctx: Context, inputs: list, work: Callable[[list, int], dict]) -> dict | None:
    """work(leaves, chunk) over chunks of a few samples (4 times the cross-check's), or over the whole batch at once where the
    samples interact and it fits; None where it cannot be had (no batched input, or not separable and too big)."""
    leaves = [i for i, x in enumerate(inputs) if isinstance(x, torch.Tensor) and x.is_floating_point()]
    if not leaves or inputs[leaves[0]].dim() == 0:
        return None
    batch = inputs[leaves[0]].shape[0]
    oom = getattr(torch.cuda, "OutOfMemoryError", RuntimeError)
    result = None
    for chunk in dict.fromkeys((min(batch, max(1, fp64_samples(ctx, batch) * 4)), batch)):
        try:
            result = work(leaves, chunk)
            break
        except NotSeparable:
            ctx.free()
        except oom:
            break
    ctx.free()
    return result


# ---- gradients -----------------------------------------------------------------------------------------

def fp64_arbiter(ctx: Context, inputs: list, upstream: Callable, keys: list[str], new_grads: dict,
                 ref_grads: dict) -> dict | None:
    """{key: (solution's Distance, reference's Distance)} of gradients from the whole-batch float64 gradient,
    or None where it cannot be had."""
    with torch.no_grad():
        full_out = tensors_of(ctx.run(ctx.ref_model, inputs, same_draws=True))
    grads_out = upstream(full_out)

    def work(leaves: list[int], chunk: int) -> dict:
        return _gradient_distances(ctx, inputs, leaves, full_out, grads_out, keys, new_grads, ref_grads, chunk)
    return by_chunks(ctx, inputs, work)


def _gradient_distances(ctx: Context, inputs: list, leaves: list[int], full_out: list, grads_out: list,
                        keys: list[str], new_grads: dict, ref_grads: dict, chunk: int) -> dict:
    batch = inputs[leaves[0]].shape[0]
    ref64 = float64_reference(ctx)
    params = dict(ref64.named_parameters())
    param_keys = [k for k in keys if k in params]
    input_keys = {f"input[{n}]": i for n, i in enumerate(leaves) if f"input[{n}]" in keys}
    sums = {k: torch.zeros_like(params[k]) for k in param_keys}
    distances = {k: (Distance(), Distance()) for k in keys}
    for start, stop, part, outs in float64_chunks(ref64, inputs, leaves, full_out, chunk,
                                                  frozenset(input_keys.values()), separable_tolerance(ctx.arithmetic)):
        whole = (start, stop) == (0, batch)
        wrt = [params[k] for k in param_keys] + [part[i] for i in input_keys.values()]
        upstream64 = [(g if whole else g[start:stop]).double() for g in grads_out]
        pairs = [(o, g) for o, g in zip(outs, upstream64) if o.requires_grad]   # not an integer output (argmax)
        gs = torch.autograd.grad([o for o, _ in pairs], wrt, [g for _, g in pairs], allow_unused=True)
        for key, g in zip(param_keys, gs):
            if g is not None:
                sums[key] += g
        for key, g in zip(input_keys, gs[len(param_keys):]):
            exact = torch.zeros_like(part[input_keys[key]]) if g is None else g
            for grads, distance in zip((new_grads, ref_grads), distances[key]):
                distance.add(grads[key][start:stop], exact, ctx.atol, ctx.rtol)
        del part, outs, gs, upstream64
    for key in param_keys:
        for grads, distance in zip((new_grads, ref_grads), distances[key]):
            distance.add(grads[key], sums[key], ctx.atol, ctx.rtol)
    return distances


def within_bound(new: Distance, ref: Distance, atol: float, dtype: torch.dtype = torch.float32) -> tuple[bool, float]:
    """The bound every disputed tensor must meet: within tolerance of float64, or its largest error no more
    than twice the reference's plus atol, plus one rounding of the largest value to `dtype` (the run's
    arithmetic dtype) beyond float32's."""
    bound = 2 * ref.max_abs + atol + rounding_allowance(dtype, ref.magnitude, BOUND_ROUNDINGS)
    return new.nan_mismatch == 0 and (new.allclose or new.max_abs <= bound), bound


def arbitrate(check: Check, key: str, distances: dict | None, atol: float, dtype: torch.dtype = torch.float32) -> Check:
    """A disputed gradient judged by the float64 bound (the noise model at `dtype`, the run's arithmetic)."""
    if distances is None:
        check.detail += "; no float64 arbiter (the batch is not separable and does not fit whole)"
        return check
    new, ref = distances[key]
    ok, bound = within_bound(new, ref, atol, dtype)
    detail = (f"{check.detail}; float64 arbiter (whole batch): solution max|Δ| {new.max_abs:.3g}, "
              f"reference {ref.max_abs:.3g}, bound {bound_words(dtype)} {bound:.3g} -> "
              + ("as accurate as the reference" if ok else "less accurate than the reference"))
    return Check(check.name, ok, detail, {**check.data, "arbiter": _arbiter_data(new, ref, bound)})


def _arbiter_data(new: Distance, ref: Distance, bound: float) -> dict:
    return {"solution_vs_fp64_max_abs": new.max_abs, "reference_vs_fp64_max_abs": ref.max_abs, "bound": bound,
            "solution_vs_fp64_rms": new.rms, "reference_vs_fp64_rms": ref.rms}


# ---- outputs -------------------------------------------------------------------------------------------

def output_distances(ctx: Context, inputs: list, indices: list[int], new_outs: list,
                     ref_outs: list) -> dict | None:
    """{output index: (solution's Distance, reference's Distance)} from the whole-batch float64 output, or None
    where it cannot be had."""
    full_out = tensors_of(ref_outs)
    positions = [i for i, o in enumerate(ref_outs) if isinstance(o, torch.Tensor)]   # output i -> tensor index

    def work(leaves: list[int], chunk: int) -> dict:
        distances = {i: (Distance(), Distance()) for i in indices}
        with torch.no_grad():
            for start, stop, part, outs in float64_chunks(float64_reference(ctx), inputs, leaves, full_out, chunk,
                                                          tol=separable_tolerance(ctx.arithmetic)):
                whole = (start, stop) == (0, inputs[leaves[0]].shape[0])
                for i in indices:
                    exact = outs[positions.index(i)]
                    for mine, distance in zip((new_outs[i], ref_outs[i]), distances[i]):
                        distance.add(mine if whole else mine[start:stop], exact, ctx.atol, ctx.rtol)
                del part, outs
        return distances
    return by_chunks(ctx, inputs, work)


def arbitrate_outputs(ctx: Context, inputs: list, checks: dict[int, Check], new_outs: list,
                      ref_outs: list) -> dict[int, Check]:
    """The disputed outputs `checks` ({output index: failing check}) re-judged on fresh `inputs` (the ones
    the trial drew, drawn again), by float64 and then, where needed, the reference's rounding noise."""
    distances = output_distances(ctx, inputs, list(checks), new_outs, ref_outs)
    judged, noisy = {}, []
    for i, check in checks.items():
        if distances is None:
            check.detail += "; no float64 arbiter (the batch is not separable and does not fit whole)"
            noisy.append(i)
            continue
        new, ref = distances[i]
        ok, bound = within_bound(new, ref, ctx.atol, ctx.arithmetic)
        detail = (f"{check.detail}; float64 arbiter (whole batch): solution max|Δ| {new.max_abs:.3g} rms "
                  f"{new.rms:.3g}, reference {ref.max_abs:.3g} rms {ref.rms:.3g}, bound {bound_words(ctx.arithmetic)} "
                  f"{bound:.3g}")
        data = {**check.data, "arbiter": _arbiter_data(new, ref, bound)}
        if not ok:
            judged[i] = Check(check.name, False, detail + " -> less accurate than the reference", data)
        elif new.allclose or new.rms <= ref.rms:
            judged[i] = Check(check.name, True, detail + " -> as accurate as the reference", data)
        else:
            checks[i] = Check(check.name, False, detail + ", rms above the reference's", data)
            noisy.append(i)
    if noisy:
        plain = {i: ref_outs[i] for i in noisy}
        noise = rounding_sensitivity(ctx, model_outputs(ctx, ctx.ref_model, inputs), noisy, plain,
                                     settled=cleared_against(new_outs, ref_outs, ctx.atol, ctx.rtol))
        for i in noisy:
            judged[i] = judge_by_sensitivity(checks[i], new_outs[i], ref_outs[i], noise[i], ctx.atol, ctx.rtol,
                                             what="output", dtype=ctx.arithmetic)
    return judged
