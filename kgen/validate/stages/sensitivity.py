"""Rounding sensitivity: how far the reference's own output or gradient moves when its arithmetic is disturbed
at the level of its rounding (float32's, or the run's float16 or bfloat16), the last arbiter of an output or
gradient that misses the reference.

Three kinds of result cannot be matched by a correct solution that merely rounds differently:
  * kinks crossed by rounding: clamp/Hardtanh bounds, ReLU at 0, the winner of a max/min or of a MaxPool
    window. An element whose value sits within an ulp or two of the kink goes one way in the reference and
    the other way in the solution, and the whole term it contributes (for L2-85, dout * y of one pooled
    element, ~0.3 in a scale gradient of ~465) appears or disappears. Which way float64 goes is luck too,
    so the float64 arbiter (arbiter.py) cannot settle it: a single flip is a coin toss, not an inaccuracy.
  * a TF32 library op (PyTorch's default for cuDNN convolutions) after the solution's kernels: a one-ulp
    change in its input flips TF32 roundings, and the output moves by ~1e-4 to 1e-3 in a few hundred places.
  * sums with cancellation whose float64 gradient cannot be had by batch chunks (L2-75: its output's first
    dim is not the batch) or does not fit.
The measure is Monte Carlo arithmetic: the reference runs again (forward, or forward and backward) under a
dispatch mode that multiplies every fresh floating result of every ATen operation by (1 + u * a), u uniform in
[-1, 1], on the same inputs with the same upstream gradient. The amplitude a is the noise model of
numerics.py: 4 ulps of the arithmetic the result was computed in (4 eps = 2^-21 for float32: the size of the
differences between two correct float32 implementations after a few operations; float16 and bfloat16 results
are computed in float32, as PyTorch's and kgen's kernels accumulate them, so float32's), plus one rounding to
the result's dtype beyond float32's (2 * (u(dtype) - u(float32)): one ulp of bfloat16 or float16, where two
correct implementations may round a value either way; nothing for float32 and float64). So a --precision
bf16 reference jitters by about one bfloat16 ulp per operation, and under --autocast each result by its own
dtype's: the bfloat16 convolution by bfloat16's, the float32 GroupNorm by float32's. The sensitivity of a
tensor is the largest |Δ| between the jittered and the plain reference over a few independent draws, and the
most elements one draw moved out of tolerance. A disputed tensor passes when the solution is no further from
the reference than twice that |Δ| plus atol, with no more than twice as many elements out: it differs from the
reference no more than the reference differs from itself under rounding noise. A wrong result (a missing term,
a wrong scale, a forgotten window, a threshold off by a little, an offset of 1e-3 before a convolution) differs
systematically, by more or in more places, and still fails; the report shows the numbers.

A tensor still disputed after those draws gets ESCALATION_DRAWS more at ESCALATED_ULPS. Two reasons the first
draws can miss a correct solution's kink crossings:
  * they are few: an element a few ulps from a kink crosses it in a 4-ulp draw with probability (1 - d/4) / 2,
    and with two or three such elements a trial, three draws cross none about one time in twenty (L2-85,
    `3+2*randn` inputs: the solution crossed a clamp bound at two elements, 2.26 in a scale gradient of 28, and
    three draws moved the reference by 0.0005);
  * a fused ATen op rounds inside: PyTorch's GroupNorm forms y = a x + b (a = rstd gamma, b = beta - a mean), so
    where |mean| is several standard deviations, y's rounding error is some ulps of a x, not of y, and one 4-ulp
    jitter of the op's result understates it.
ESCALATED_ULPS is still far below any real error: a threshold off by 1e-3, or a 1e-3 offset, is 8000 float32
ulps at 1.0, and the count of elements out keeps a band of wrong values failing.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from kgen.validate.checks import Check
from kgen.validate.context import Context
from kgen.validate.numerics import CHUNK, compare, rounding_excess, shares_memory, unit_roundoff
from kgen.validate.stages.calls import forward_backward

JITTER_ULPS = 4   # ulps of the arithmetic in each fresh floating result's jitter (jitter_amplitude)
DRAWS = 3
ESCALATED_ULPS = 16   # the jitter of the draws a still-disputed tensor gets
ESCALATION_DRAWS = 6


def jitter_amplitude(dtype: torch.dtype, ulps: float = JITTER_ULPS) -> float:
    """The relative amplitude of a `dtype` result's jitter: `ulps` ulps (2 u each) of its arithmetic -- its own
    dtype, float32 at the coarsest -- plus one rounding to its dtype beyond float32's. ulps * eps for float32 and
    float64; about one ulp of bfloat16 or float16."""
    arithmetic = min(unit_roundoff(dtype), unit_roundoff(torch.float32))
    return 2 * (ulps * arithmetic + rounding_excess(dtype))


def jitter_words(dtype: torch.dtype = torch.float32) -> str:
    """The jitter of a run at `dtype` (its arithmetic), as a report says it."""
    extra = f" and one ulp of each {str(dtype).replace('torch.', '')} result" if rounding_excess(dtype) else ""
    return f"±{JITTER_ULPS}-ulp jitter of its arithmetic{extra}"


class RoundingJitter(TorchDispatchMode):
    """Multiplies the fresh floating outputs of every ATen op by (1 + u * jitter_amplitude(dtype)), the noise
    drawn in float32 at the least (a float16 or bfloat16 result is jittered as a continuous value, then rounded
    to its dtype once). Outputs that alias an input (views, in-place and out= ops) are left alone: their values
    were made, and jittered, elsewhere."""

    def __init__(self, seed: int, ulps: float = JITTER_ULPS):
        super().__init__()
        self.seed, self.ulps = seed, ulps
        self.generators: dict = {}
        self.jittered = 0   # tensors jittered (a test can see that the mode saw the model's ops)

    def _generator(self, device: torch.device) -> torch.Generator:
        key = str(device)
        if key not in self.generators:
            generator = torch.Generator(device=device)
            generator.manual_seed(self.seed)
            self.generators[key] = generator
        return self.generators[key]

    def _jitter(self, t: torch.Tensor) -> None:
        generator = self._generator(t.device)
        rel = jitter_amplitude(t.dtype, self.ulps)
        noise_dtype = torch.promote_types(t.dtype, torch.float32)
        flat = t.view(-1) if t.is_contiguous() else None
        if flat is None:   # rare: a non-contiguous fresh result; one noise tensor of its size
            noise = torch.rand(t.shape, generator=generator, device=t.device, dtype=noise_dtype)
            t.mul_(noise.mul_(2 * rel).add_(1 - rel))
        else:              # chunked, so a 7.5 GB activation needs only a 128 MB scratch
            for start in range(0, flat.numel(), CHUNK):
                part = flat[start:start + CHUNK]
                noise = torch.rand(part.shape, generator=generator, device=t.device, dtype=noise_dtype)
                part.mul_(noise.mul_(2 * rel).add_(1 - rel))
        self.jittered += 1

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        schema = func._schema
        if schema.is_mutable or any(r.alias_info is not None for r in schema.returns):
            return out
        operands = [a for a in tree_flatten((args, kwargs or {}))[0] if isinstance(a, torch.Tensor)]
        for t in (out if isinstance(out, (tuple, list)) else (out,)):
            if not (isinstance(t, torch.Tensor) and t.is_floating_point() and t.numel() > 0):
                continue
            if any(shares_memory(t, a) for a in operands):   # an alias its schema does not declare
                continue                                      # (_unsafe_view): never write a parameter or input
            self._jitter(t)
        return out


@dataclass
class Sensitivity:
    """How far the jittered reference's gradient got from the plain one, over the draws: the largest |Δ|,
    and the most elements outside the tolerance in one draw; the draws taken and the largest jitter among them."""
    max_abs: float = 0.0
    outside: int = 0
    draws: int = 0
    ulps: float = JITTER_ULPS

    def add(self, moved, ulps: float) -> None:
        self.max_abs, self.outside = max(self.max_abs, moved.max_abs), max(self.outside, moved.outside)
        self.draws += 1
        self.ulps = max(self.ulps, ulps)

    def words(self, dtype: torch.dtype) -> str:
        """The draws as a report says them."""
        if self.ulps == JITTER_ULPS:
            return f"{jitter_words(dtype)} ({self.draws} draws)"
        return (f"{jitter_words(dtype)} ({DRAWS} draws) and ±{self.ulps:g} ulps ({self.draws - DRAWS} more draws: "
                "still disputed after the first)")


def rounding_sensitivity(ctx: Context, produce: Callable[[], dict], keys: list, plain: dict,
                         tol: tuple[float, float] | None = None,
                         settled: Callable[[object, Sensitivity], bool] | None = None) -> dict:
    """{key: Sensitivity of the reference's `plain` tensors under RoundingJitter, over DRAWS draws}; `produce`
    runs the reference again (forward, or forward and backward) and returns its tensors by key; elements out
    are counted at `tol` (atol, rtol; default the run's). With `settled` (key, sensitivity -> whether the
    dispute is over), the keys it leaves open get ESCALATION_DRAWS more at ESCALATED_ULPS. Where the reference
    fails under the jitter, every key maps to one line saying so, and its checks stand."""
    try:
        tol = tol or (ctx.atol, ctx.rtol)
        sensitivity = {key: Sensitivity() for key in keys}
        _draw(ctx, produce, sensitivity, plain, tol, range(DRAWS), JITTER_ULPS)
        if settled is not None:
            open_keys = {key: s for key, s in sensitivity.items() if not settled(key, s)}
            if open_keys:
                _draw(ctx, produce, open_keys, plain, tol, range(DRAWS, DRAWS + ESCALATION_DRAWS), ESCALATED_ULPS)
        return sensitivity
    except Exception as error:  # the reference's own code, run under a dispatch mode: never a crash here
        ctx.free()
        why = f"{type(error).__name__}: {(str(error).strip().splitlines() or [''])[0][:200]}"
        return {key: why for key in keys}


def _draw(ctx: Context, produce: Callable[[], dict], sensitivity: dict, plain: dict, tol: tuple[float, float],
          draws: range, ulps: float) -> None:
    """Adds `draws` draws at `ulps` to each key's Sensitivity."""
    for draw in draws:
        with RoundingJitter(seed=ctx.seed + 7919 * (draw + 1), ulps=ulps):
            jittered_all = produce()
        for key, s in sensitivity.items():
            jittered, base = jittered_all.get(key), plain.get(key)
            if jittered is None or base is None or jittered.shape != base.shape:
                continue
            s.add(compare(jittered, base, *tol), ulps)
        del jittered_all
        ctx.free()


def reference_gradients(ctx: Context, inputs: list, upstream: Callable) -> Callable[[], dict]:
    """What the gradients' sensitivity reruns: the reference's forward and backward, its gradients by name."""
    return lambda: forward_backward(ctx, ctx.ref_model, inputs, upstream, True)[1] or {}


def model_outputs(ctx: Context, model, inputs: list) -> Callable[[], dict]:
    """What an output's sensitivity reruns: a model's forward, its tensor outputs by position."""
    def produce() -> dict:
        with torch.no_grad():
            outs = ctx.run(model, inputs, same_draws=True)
        return {i: o for i, o in enumerate(outs) if isinstance(o, torch.Tensor)}
    return produce


def within_noise(distance, sensitivity: Sensitivity, atol: float) -> bool:
    """The solution's distance from the reference (numerics.compare) within the reference's rounding noise: |Δ| at
    most 2 * sensitivity + atol, and no more than twice as many elements out as one jittered draw had (where the
    jitter moved any out at all)."""
    within = distance.max_abs <= 2 * sensitivity.max_abs + atol
    few = sensitivity.outside == 0 or distance.outside <= 2 * sensitivity.outside
    return distance.nan_mismatch == 0 and within and few


def cleared_against(new: dict, ref: dict, atol: float, rtol: float) -> Callable[[object, Sensitivity], bool]:
    """rounding_sensitivity's `settled` for the solution's tensors new[key] against the reference's ref[key]: whether
    the noise measured so far clears the solution."""
    return lambda key, s: within_noise(compare(new[key], ref[key], atol, rtol), s, atol)


def judge_by_sensitivity(check: Check, new: torch.Tensor, ref: torch.Tensor, sensitivity: Sensitivity | str,
                         atol: float, rtol: float, what: str = "gradient", dtype: torch.dtype = torch.float32) -> Check:
    """The disputed gradient (or output: `what`) re-judged against the reference's rounding noise: |solution - reference| at most
    2 * sensitivity + atol, and (where the jitter moved elements out of tolerance at all) no more than twice
    as many elements out of tolerance as one jittered draw had. The count keeps a kink handled wrongly over
    a band (a threshold off by a little: every element near it wrong) from passing as a few rounding flips."""
    if isinstance(sensitivity, str):
        return Check(check.name, check.ok, f"{check.detail}; rounding-sensitivity arbiter unavailable: {sensitivity}",
                     check.data)
    distance = compare(new, ref, atol, rtol)
    bound = 2 * sensitivity.max_abs + atol
    ok = within_noise(distance, sensitivity, atol)
    detail = (f"{check.detail}; rounding-sensitivity arbiter: under {sensitivity.words(dtype)} "
              f"the reference's own {what} moves by up to {sensitivity.max_abs:.3g} with up to "
              f"{sensitivity.outside} elements out of tolerance; the solution is {distance.max_abs:.3g} from it "
              f"(bound 2×sensitivity+atol {bound:.3g}) with {distance.outside} out -> "
              + ("within the reference's rounding noise (a kink crossed, or a cancelling sum)" if ok
                 else "beyond the reference's rounding noise"))
    return Check(check.name, ok, detail, {**check.data, "sensitivity": {
        "reference_jitter_max_abs": sensitivity.max_abs, "reference_jitter_outside": sensitivity.outside,
        "solution_vs_reference_max_abs": distance.max_abs, "solution_outside": distance.outside,
        "bound": bound, "draws": sensitivity.draws, "jitter_ulps": sensitivity.ulps}})


def rejudge_failing(ctx: Context, inputs: list, upstream: Callable, checks: dict[str, Check], new_grads: dict,
                    ref_grads: dict) -> dict[str, Check]:
    """{key: check} with every failing gradient check whose two gradients have one shape re-judged against
    the reference's rounding sensitivity (measured once, for all of them, on `inputs`)."""
    failing = [key for key, check in checks.items() if check.ok is False and new_grads.get(key) is not None
               and ref_grads.get(key) is not None and new_grads[key].shape == ref_grads[key].shape]
    if not failing:
        return checks
    sensitivity = rounding_sensitivity(ctx, reference_gradients(ctx, inputs, upstream), failing, ref_grads,
                                       settled=cleared_against(new_grads, ref_grads, ctx.atol, ctx.rtol))
    return {key: judge_by_sensitivity(check, new_grads[key], ref_grads[key], sensitivity[key], ctx.atol, ctx.rtol,
                                      dtype=ctx.arithmetic)
            if key in failing else check for key, check in checks.items()}
