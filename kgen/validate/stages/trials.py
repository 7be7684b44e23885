"""The trials: fresh inputs of the reference's shapes (the reference's distribution, then a shifted and
scaled one), each run forward (outputs allclose, layout, inputs untouched, no aliasing, determinism) and,
unless --no-backward, backward (the gradient of every floating input and trainable parameter). An output or
gradient that misses the reference is arbitrated by float64 over the whole batch and the reference's own
rounding sensitivity (arbiter.py, sensitivity.py): a solution as accurate as the reference passes.

At --precision fp16|bf16 the models and the floating inputs are in that dtype, and so are the outputs and the
gradients compared (each gradient in its parameter's or input's dtype, which the solution's must match); under
--autocast each forward of both models runs under torch.autocast and the solution must return the dtypes the
reference's autocast run returns. The comparisons take the run's atol and rtol (KernelBench's for that dtype
unless given)."""
from __future__ import annotations

import torch

from kgen.validate.checks import Check, failed, passed, skipped
from kgen.validate.context import Context, StageError, reference_error, same_value, tensors_of
from kgen.validate.numerics import bitwise_equal, compare, shares_memory, tensor_meta
from kgen.validate.stages.calls import (EVAL_TRIAL, forward_backward, trial_kind, trial_label, trial_seed,
                                       upstream_for)
from kgen.validate.stages.determinism import check_determinism, reproducibility
from kgen.validate.stages.arbiter import arbitrate, arbitrate_outputs, fp64_arbiter
from kgen.validate.stages.sensitivity import rejudge_failing


def stage_forward(ctx: Context, trial: int) -> None:
    label = trial_label(trial)
    inputs = ctx.inputs(trial_kind(trial), trial_seed(ctx, trial))
    kept = [x.clone() for x in tensors_of(inputs)]
    with torch.no_grad():
        ref_outs = reference_forward(ctx, inputs)
        ref_repro = reproducibility(ctx, ctx.ref_model, inputs, ref_outs)   # before the solution runs
        new_outs = ctx.run(ctx.new_model, inputs, same_draws=True)
        ctx.add(check_inputs_untouched(label, tensors_of(inputs), kept))
        del kept
        ctx.add(check_no_alias(label, new_outs, tensors_of(inputs)))
        layout = check_layout(label, new_outs, ref_outs)
        ctx.add(layout)
        ctx.layout_ok[trial] = layout.ok
        ctx.add(check_contiguous(label, new_outs, ref_outs))
        if layout.ok:
            for check in forward_checks(ctx, trial, new_outs, ref_outs).values():
                ctx.add(check)
        else:
            ctx.add(skipped(f"{label} forward", "outputs not comparable (see layout)"))
        del ref_outs
        if trial == EVAL_TRIAL:
            return   # the same kernels as the trials', whose determinism they check
        for check in check_determinism(ctx, label, inputs, new_outs, ref_repro):
            ctx.add(check)


def reference_forward(ctx: Context, inputs: list) -> list:
    """The reference's outputs; where the reference itself raises (a float32 cast inside it meeting parameters
    moved to --precision's dtype), the run ends saying so: there is nothing to hold the solution to."""
    try:
        return ctx.run(ctx.ref_model, inputs, same_draws=True)
    except RuntimeError as error:
        raise StageError("reference", f"the reference itself fails {run_words(ctx)}({reference_error(error)}): "
                                      "nothing to compare the solution with") from None


def run_words(ctx: Context) -> str:
    """'at --precision bf16 ', 'under --autocast fp16 ', '' at float32, with ' channels-last' where laid out so."""
    words = []
    if ctx.cast is not None:
        words.append(f"at --precision {ctx.config.get('precision')}")
    if ctx.autocast is not None:
        words.append(f"under --autocast {ctx.config.get('autocast')}")
    if ctx.layout:
        words.append("channels-last")
    return " ".join(words) + " " if words else ""


def forward_checks(ctx: Context, trial: int, new_outs: list, ref_outs: list) -> dict[int, Check]:
    """{output index: check} of each tensor output against the reference; one that misses it (with no NaN
    where the reference has none) is arbitrated on the trial's inputs drawn afresh, so that a solution that
    wrote into its input cannot move the float64 truth onto its own input."""
    label = trial_label(trial)
    checks = {}
    for i, (new, ref) in enumerate(zip(new_outs, ref_outs)):
        if isinstance(ref, torch.Tensor):
            suffix = f" output[{i}]" if len(ref_outs) > 1 else ""
            checks[i] = check_close(f"{label} forward{suffix}", new, ref, ctx.atol, ctx.rtol)
    disputed = {i: c for i, c in checks.items() if c.ok is False and not c.data.get("nan_mismatch")}
    if disputed:
        inputs = ctx.inputs(trial_kind(trial), trial_seed(ctx, trial))
        checks.update(arbitrate_outputs(ctx, inputs, disputed, new_outs, ref_outs))
        del inputs
    return checks


def check_inputs_untouched(label: str, inputs: list, kept: list) -> Check:
    name = f"{label} inputs untouched"
    changed = [i for i, (x, k) in enumerate(zip(inputs, kept)) if not bitwise_equal(x, k)]
    if changed:
        return failed(name, f"forward wrote into input(s) {changed}", changed=changed)
    return passed(name)


def check_no_alias(label: str, outs: list, inputs: list) -> Check:
    name = f"{label} output does not alias an input"
    pairs = [(o, i) for o, out in enumerate(outs) if isinstance(out, torch.Tensor)
             for i, x in enumerate(inputs) if shares_memory(out, x)]
    if pairs:
        return failed(name, f"output/input memory overlaps: {pairs}", pairs=pairs)
    return passed(name)


def check_layout(label: str, new_outs: list, ref_outs: list) -> Check:
    name = f"{label} output shape/dtype/device"
    if len(new_outs) != len(ref_outs):
        return failed(name, f"{len(new_outs)} outputs, reference returns {len(ref_outs)}")
    problems = []
    for i, (new, ref) in enumerate(zip(new_outs, ref_outs)):
        if not isinstance(ref, torch.Tensor):
            if not same_value(new, ref):
                problems.append(f"output[{i}] is {new!r}, reference {ref!r}")
            continue
        if not isinstance(new, torch.Tensor):
            problems.append(f"output[{i}] is a {type(new).__name__}, not a tensor")
            continue
        for what in ("shape", "dtype", "device"):
            if getattr(new, what) != getattr(ref, what):
                problems.append(f"output[{i}] {what} {getattr(new, what)} vs reference {getattr(ref, what)}")
    if problems:
        return failed(name, "; ".join(problems), new=[tensor_meta(o) for o in new_outs],
                      ref=[tensor_meta(o) for o in ref_outs])
    first = next((o for o in ref_outs if isinstance(o, torch.Tensor)), None)
    detail = "" if first is None else f"{tuple(first.shape)} {str(first.dtype).replace('torch.', '')} {first.device}"
    return passed(name, detail, outputs=[tensor_meta(o) for o in ref_outs])


def check_contiguous(label: str, outs: list, ref_outs: list) -> Check:
    """A solution's output is contiguous where the reference's is (a reference that returns a transposed view
    may have its solution do the same)."""
    name = f"{label} output contiguous"
    bad = [i for i, (o, r) in enumerate(zip(outs, ref_outs)) if isinstance(o, torch.Tensor) and not o.is_contiguous()
           and not (isinstance(r, torch.Tensor) and not r.is_contiguous())]
    if bad:
        return failed(name, f"output(s) {bad} not contiguous: strides {[outs[i].stride() for i in bad]}")
    return passed(name)


def check_close(name: str, new: torch.Tensor, ref: torch.Tensor, atol: float, rtol: float) -> Check:
    result = compare(new, ref, atol, rtol)
    data = result.as_dict()
    if result.nan_mismatch:
        return failed(name, result.summary(), **data)
    return Check(name, result.allclose, result.summary(), data)


def stage_backward(ctx: Context, trial: int) -> None:
    label = trial_label(trial)
    if not ctx.config.get("backward", True):
        return   # the reference's backward raised in an earlier trial (said once, below)
    if not ctx.layout_ok.get(trial, False):
        ctx.add(skipped(f"{label} backward", "forward outputs not comparable"))
        return
    inputs = ctx.inputs(trial_kind(trial), trial_seed(ctx, trial))
    upstream = upstream_for(ctx, trial_seed(ctx, trial) + 1)
    try:
        _, ref_grads = forward_backward(ctx, ctx.ref_model, inputs, upstream, True)
    except RuntimeError as error:
        # no gradient to compare with: the rest (trials, float64, kernels, bench) runs as --no-backward, and the
        # report says why rather than calling a solution broken for what its reference does
        ctx.config["backward"] = False
        ctx.add(skipped("backward", f"the reference's own backward raises ({reference_error(error)}): "
                                    "no gradient to compare with, the rest runs as --no-backward"))
        del inputs
        ctx.free()
        return
    ctx.free()
    _, new_grads = forward_backward(ctx, ctx.new_model, inputs, upstream, True)
    if new_grads is None:
        ctx.add(failed(f"{label} backward", "the solution's output does not require grad (not trainable)"))
        return
    if ref_grads is None:
        ctx.add(skipped(f"{label} backward", "the reference's output does not require grad"))
        return
    checks = dict(zip(grad_keys(new_grads, ref_grads), grad_checks(label, new_grads, ref_grads, ctx.atol, ctx.rtol)))
    disputed = [key for key, check in checks.items()
                if check.ok is False and key in ref_grads
                and new_grads.get(key) is not None and ref_grads[key] is not None
                and new_grads[key].shape == ref_grads[key].shape]
    if disputed:
        # fresh inputs (same seed): a solution that wrote into its input must not move the arbiter's float64
        # gradient onto its own input
        del inputs
        inputs = ctx.inputs(trial_kind(trial), trial_seed(ctx, trial))
        distances = fp64_arbiter(ctx, inputs, upstream, disputed, new_grads, ref_grads)
        arbitrated = {key: arbitrate(checks[key], key, distances, ctx.atol, ctx.arithmetic) for key in disputed}
        checks.update(rejudge_failing(ctx, inputs, upstream, arbitrated, new_grads, ref_grads))
    del inputs
    for check in checks.values():
        ctx.add(check)


def grad_keys(new_grads: dict, ref_grads: dict) -> list[str]:
    return list(ref_grads) + [k for k in new_grads if k not in ref_grads]


def grad_checks(label: str, new_grads: dict, ref_grads: dict, atol: float, rtol: float) -> list[Check]:
    checks = []
    for key in grad_keys(new_grads, ref_grads):
        name = f"{label} grad {key}"
        if key not in new_grads or key not in ref_grads:
            where = "solution" if key in new_grads else "reference"
            checks.append(failed(name, f"a trainable parameter only in the {where}"))
            continue
        new, ref = new_grads[key], ref_grads[key]
        if new is None and ref is None:
            checks.append(passed(name, "no gradient in either (unused)"))
        elif new is None or ref is None:
            checks.append(failed(name, f"gradient is None in the {'solution' if new is None else 'reference'} only"))
        elif new.shape != ref.shape or new.dtype != ref.dtype:
            checks.append(failed(name, f"{tuple(new.shape)} {new.dtype} vs reference {tuple(ref.shape)} {ref.dtype}"))
        else:
            checks.append(check_close(name, new, ref, atol, rtol))
    return checks
