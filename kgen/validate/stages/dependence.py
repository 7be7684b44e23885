"""The degenerate-output guard: a solution whose output does not follow its input fails, at any tolerance.

A file that returns zeros, a constant, or the output it cached on its first call can sit within a loose
tolerance of a reference whose outputs are small (KernelBench's users report zero outputs passing some
problems at 1e-2). What such a file cannot do is respond to its input. So the solution and the reference
each run on two different inputs (the reference's distribution, and a shifted and scaled one), and the
change of the solution's output, new(A) - new(B), is compared with the reference's, ref(A) - ref(B), on an
evenly spaced sample of each output's elements:

  miss      = |(new(A) - new(B)) - (ref(A) - ref(B))| / |ref(A) - ref(B)|     (Euclidean norms)
  response  = |ref(A) - ref(B)| / max(|ref(A)|, |ref(B)|)

A correct solution's miss is its error over the response, far below 1 (at bfloat16, errors of ~0.4% of the
output against a response of at least 5%: 0.16 at worst); a degenerate one's is 1. The check fails where the
reference responds (response >= 5%) and the solution misses by more than half, or where the solution's
output is bit-for-bit the same for the two inputs while the reference's moves by more than 1e-4 of its size.
A reference whose output hardly depends on its input gets an INFO line: there is nothing to follow. So does
one whose change between the two inputs is within 100 times its own rounding noise (how far its output on the
first input moves under a few ulps of jitter, sensitivity.py): L2-23's output, the mean of a GroupNorm's
output, is its bias's mean whatever the input, and what moves it is rounding alone, of any size next to a
mean near zero; a correct solution's own rounding is of that size, so its "miss" says nothing.

The factor 100 holds at float32, where the jitter is a few float32 ulps and an output that follows its input
moves by a million times that. At float16 and bfloat16 (--precision, --autocast) the jitter is one ulp of the
dtype per operation (sensitivity.py) and an output that follows its input moves by only tens of times that, so
the factor falls as the jitter grows (noise_factor), to no less than 10: a correct solution's miss is about its
rounding, one or two jitters, over the change, so a change of ten jitters leaves it well under MISS_MAX.

At those dtypes the jitter misses rounding that does not average out: L2-23's float16 mean of a million stored
float16 values moves by ten times its jitter between the two inputs, all of it rounding (a solution that rounds
as faithfully differs by all of it: miss 1.0). So there the reference also runs in float64 on the first samples
of both inputs (fp64.fp64_samples): where its change at the run's dtype is within the factor of how far that
change is from float64's, it is rounding, and the output is not judged (float64_noise).
"""
from __future__ import annotations

import math

import torch

from kgen.validate.checks import Check, failed, note, passed
from kgen.validate.context import Context, sliced, tensors_of
from kgen.validate.float64 import float64_reference
from kgen.validate.stages.fp64 import fp64_samples
from kgen.validate.stages.sensitivity import RoundingJitter, jitter_amplitude

SAMPLE = 1 << 20        # elements compared per output
RESPONSE_MIN = 0.05     # the reference's output must move by this share of its size for the miss to be judged
MISS_MAX = 0.5          # the largest miss allowed
CONSTANT_RESPONSE = 1e-4  # above this response, an output bit-for-bit unchanged is degenerate
NOISE_FACTOR = 100      # the reference's change must exceed its rounding noise this many times to be judged
NOISE_FACTOR_MIN = 10   # ... at float32; at a coarser dtype proportionally fewer, never fewer than this
DRAWS = (("rand", 31), ("3+2*randn", 37))   # input kind and seed offset of the two inputs


def noise_factor(dtype: torch.dtype) -> float:
    """How many times its rounding noise the reference's change must exceed to be judged, at the run's dtype:
    NOISE_FACTOR at float32, smaller in proportion to how much larger the dtype's jitter is, NOISE_FACTOR_MIN
    at the least."""
    return max(NOISE_FACTOR_MIN, NOISE_FACTOR * jitter_amplitude(torch.float32) / jitter_amplitude(dtype))


def sample(t: torch.Tensor) -> torch.Tensor:
    """Up to SAMPLE evenly spaced elements of t, in float64."""
    flat = t.reshape(-1)
    step = max(1, flat.numel() // SAMPLE)
    return flat[::step][:SAMPLE].to(torch.float64)


def stage_dependence(ctx: Context) -> None:
    samples, noise = [], []
    for n, (kind, offset) in enumerate(DRAWS):
        inputs = ctx.inputs(kind, ctx.seed + offset)
        with torch.no_grad():
            ref = tensors_of(ctx.run(ctx.ref_model, inputs, same_draws=True))
            new = tensors_of(ctx.run(ctx.new_model, inputs, same_draws=True))
            if n == 0:
                noise = rounding_noise(ctx, inputs, ref)
        samples.append(([sample(t) for t in ref], [sample(t) if t.shape == r.shape else None
                                                  for t, r in zip(new, ref)]))
        del inputs, ref, new
        ctx.free()
    (ref_a, new_a), (ref_b, new_b) = samples
    factor = noise_factor(ctx.arithmetic)
    measured = float64_noise(ctx) if ctx.arithmetic != torch.float32 else []
    for i in range(min(len(ref_a), len(new_a))):
        suffix = f" output[{i}]" if len(ref_a) > 1 else ""
        name = f"output follows its input{suffix}"
        if i < len(measured) and measured[i] is not None:
            change, distance = measured[i]
            if change <= factor * distance:
                ctx.add(note(name, f"not judged: on the first samples of the batch the reference's change between two inputs "
                                   f"({change:.3g}) is within {factor:g} times its distance from float64's change "
                                   f"({distance:.3g}): it does not depend on its input beyond rounding",
                             float64_change_distance=distance, reference_change=change))
                continue
        ctx.add(judge_dependence(name, ref_a[i], ref_b[i], new_a[i], new_b[i], noise[i] if i < len(noise) else None,
                                 factor))



def float64_noise(ctx: Context) -> list:
    """Per output, (|ref(A) - ref(B)|, |(ref(A) - ref(B)) - (ref64(A) - ref64(B))|) on the first samples of two
    fresh inputs: the reference's change at the run's dtype and its distance from a float64 copy's change (None
    where not measurable: no batched tensor input, or the float64 copy fails)."""
    specs = [s for s in ctx.specs if s.is_tensor and s.dtype.is_floating_point and s.shape]
    if not specs:
        return []
    batch = specs[0].shape[0]
    sliced_specs = sliced(ctx.specs, batch, fp64_samples(ctx, batch))
    try:
        ref64 = float64_reference(ctx)
        runs = []
        with torch.no_grad():
            for kind, offset in DRAWS:
                inputs = ctx.inputs(kind, ctx.seed + offset + 7, sliced_specs)
                wide = [x.double() if isinstance(x, torch.Tensor) and x.is_floating_point() else x for x in inputs]
                runs.append((tensors_of(ctx.run(ctx.ref_model, inputs, same_draws=True)),
                             tensors_of(ctx.run(ref64, wide, same_draws=True, autocast=False))))
        del ref64
    except Exception:  # the reference's own code in float64: never a crash here
        return []
    (ref_a, exact_a), (ref_b, exact_b) = runs
    out = []
    for ra, rb, ea, eb in zip(ref_a, ref_b, exact_a, exact_b):
        if not (ra.shape == rb.shape == ea.shape == eb.shape):
            out.append(None)
            continue
        change = ra.double() - rb.double()
        out.append((float(change.norm()), float((change - (ea.double() - eb.double())).norm())))
    return out


def rounding_noise(ctx: Context, inputs: list, ref: list) -> list:
    """Per output, the norm of how far the reference's sample moves under rounding jitter (None where the reference
    fails under the jitter: then no noise floor is applied)."""
    try:
        with RoundingJitter(seed=ctx.seed + 101):
            jittered = tensors_of(ctx.run(ctx.ref_model, inputs, same_draws=True))
    except Exception:  # the reference's own code under a dispatch mode: never a crash here
        return [None] * len(ref)
    return [float((sample(j) - sample(r)).norm()) if j.shape == r.shape else None for j, r in zip(jittered, ref)]


def judge_dependence(name: str, ref_a: torch.Tensor, ref_b: torch.Tensor, new_a: torch.Tensor | None,
                     new_b: torch.Tensor | None, noise: float | None = None, factor: float = NOISE_FACTOR) -> Check:
    if new_a is None or new_b is None:
        return note(name, "not judged: the output's shape differs from the reference's (see the trials)")
    d_ref = ref_a - ref_b
    size = max(float(ref_a.norm()), float(ref_b.norm()))
    change = float(d_ref.norm())
    if not (math.isfinite(change) and math.isfinite(size)) or size == 0:
        return note(name, "not judged: the reference's output is zero or not finite on the sample")
    response = change / size
    constant = torch.equal(new_a, new_b)
    miss = float((new_a - new_b - d_ref).norm()) / change if change else math.inf
    data = {"response": response, "miss": miss if math.isfinite(miss) else None, "constant": constant,
            "elements": int(ref_a.numel()), "reference_noise": noise}
    if noise is not None and change <= factor * noise:
        return note(name, f"not judged: between two inputs the reference's output moves by {change:.3g}, within "
                          f"{factor:g} times its own rounding noise ({noise:.3g}): it does not depend on its input "
                          "beyond rounding", **data)
    between = (f"between two inputs the reference's output moves by {response:.3g} of its size; the solution's "
               f"change differs from it by {miss:.3g} of it")
    if constant and response > CONSTANT_RESPONSE:
        return failed(name, f"the solution's output is the same for two different inputs, where the reference's "
                            f"moves by {response:.3g} of its size: it does not depend on its input", **data)
    if response < RESPONSE_MIN:
        return note(name, f"not judged: between two inputs the reference's output moves by only {response:.3g} "
                          f"of its size", **data)
    if not math.isfinite(miss) or miss > MISS_MAX:
        return failed(name, f"{between} (more than {MISS_MAX:g}): the output does not follow the input", **data)
    return passed(name, between, **data)
