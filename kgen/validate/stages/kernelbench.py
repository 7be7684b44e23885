"""What KernelBench alone would conclude: its correctness protocol, reproduced
(kernelbench/eval.py, eval_kernel_against_ref and run_and_check_correctness):

  - init inputs: the reference's get_init_inputs() called after set_seed(seed) (or --init-args)
  - Model(*init) and ModelNew(*init), each constructed right after set_seed(seed), seed 42, then moved to
    the precision's dtype (`.to(device, dtype)`; at fp32 left as constructed)
  - num_correct_trials seeds drawn with torch.randint after torch.manual_seed(seed)
  - per trial: set_seed(trial_seed); inputs = the reference's get_inputs(), every tensor cast to the
    precision's dtype (float32, or --precision's float16 / bfloat16) and put on the device; under no_grad the
    reference's output, then the solution's
  - correct iff every trial has the same shape and torch.allclose(output, output_new, atol=tol, rtol=tol)
    (tol = get_tolerance_for_precision: 1e-4 at fp32, 1e-2 at fp16 and bf16; NaN anywhere is a mismatch, as
    allclose's equal_nan=False)

KernelBench has no autocast: under --autocast its protocol runs as it would, at fp32 without autocast, and the
result says so.

Two differences, neither changing what is compared: get_inputs() runs with the device as the default
device (KernelBench draws on the CPU and copies, which for L1-35's 7.5 GB input takes seconds), so the
values differ but not their distribution; with --input-shape the floating inputs are torch.rand of the
given shapes. One more at fp16 and bf16: the allclose is evaluated in float32 (torch.allclose on two
half-precision tensors evaluates it in their dtype), so the verdicts can differ only for a value within one
rounding of the tolerance. Forward only: KernelBench checks no gradient, no state_dict, no determinism. The
result goes to the "kernelbench" section of the results; it never changes kgen's exit code.

Where a trial fails on values (same shape, no NaN), the reason is measured, not guessed: the reference runs
again on that trial's inputs with its arithmetic jittered by a few ulps (sensitivity.py), and the floor is
how far it then moves from itself, and in how many values beyond KernelBench's tolerance. A reference that
misses the tolerance against itself (a TF32 convolution after the solution's kernels) is one that no
re-implementation rounding differently can meet; the report says so, and whether the solution is within
that noise or beyond it.
"""
from __future__ import annotations

import torch

from kgen.validate.arguments import KERNELBENCH_TOLERANCE
from kgen.validate.context import DTYPES, Context, dtype_name, outputs_of, progress, reference_error, same_value
from kgen.validate.numerics import compare, count_nan
from kgen.validate.stages.sensitivity import DRAWS, JITTER_ULPS, jitter_words, model_outputs, rounding_sensitivity

TOLERANCE = {DTYPES[name]: tol for name, tol in KERNELBENCH_TOLERANCE.items()}   # get_tolerance_for_precision
DEFAULT_TRIALS = 5     # kb_eval.py's --trials (eval_kernel_against_ref's own default is 1)
PROTOCOL = ("KernelBench eval_kernel_against_ref: same seed before constructing each model, reference's "
            "get_inputs() per trial seed, forward under no_grad, torch.allclose(atol=rtol={tol:g}) at {precision}")
NO_AUTOCAST = "KernelBench has no autocast: its protocol ran at fp32, without autocast"
NO_CHANNELS_LAST = "KernelBench has no channels-last: its protocol ran on models and inputs as constructed (NCHW)"


def protocol_dtype(ctx: Context) -> torch.dtype:
    """The dtype KernelBench's --precision gives this run: --precision's, else float32 (also under --autocast)."""
    return ctx.cast or torch.float32


def set_seed(seed: int) -> None:
    """kernelbench.eval.set_seed."""
    torch.manual_seed(seed)
    if torch.cuda.is_available():
        torch.cuda.manual_seed(seed)


def trial_seeds(seed: int, trials: int) -> list[int]:
    torch.manual_seed(seed)
    return [torch.randint(0, 2**32 - 1, (1,)).item() for _ in range(trials)]


def kernelbench_inputs(ctx: Context, trial_seed: int) -> list:
    set_seed(trial_seed)
    if ctx.config.get("input_shapes"):
        inputs = ctx.inputs("rand", trial_seed, layout=False)
    elif hasattr(torch.device, "__enter__"):   # torch >= 2.0
        with torch.device(ctx.device):
            inputs = list(ctx.ref_mod.get_inputs())
    else:
        inputs = list(ctx.ref_mod.get_inputs())
    dtype = protocol_dtype(ctx)
    return [x.to(dtype=dtype).to(ctx.device) if isinstance(x, torch.Tensor) else x for x in inputs]


def compare_trial(output, output_new, tol: float) -> dict:
    """One trial of run_and_check_correctness: shape, then allclose(output, output_new) (rtol scales |output_new|)."""
    if not isinstance(output, torch.Tensor) or not isinstance(output_new, torch.Tensor):
        return {"ok": False, "problem": f"outputs are {type(output).__name__} and {type(output_new).__name__}, "
                                        f"KernelBench compares one tensor"}
    if output.shape != output_new.shape:
        return {"ok": False, "problem": f"output shape mismatch: expected {tuple(output.shape)}, "
                                        f"got {tuple(output_new.shape)}"}
    cmp = compare(output, output_new.to(output.dtype), tol, tol)
    nan = count_nan(output) + count_nan(output_new)
    ok = cmp.allclose and nan == 0
    result = {"ok": ok, "max_abs": cmp.max_abs, "outside": cmp.outside, "numel": cmp.numel, "nan": nan}
    if not ok:
        result["problem"] = (f"output mismatch: max|Δ| {cmp.max_abs:.3g}, {cmp.outside}/{cmp.numel} outside"
                             + (f", {nan} NaN" if nan else ""))
    return result


def reference_floor(ctx: Context, ref_model, seed: int, output, trial: dict, tol: float) -> dict:
    """How far the reference moves from its own `output` on this trial's inputs under rounding jitter, against
    how far the solution is from it (KernelBench's tolerance for both). The inputs are drawn afresh: the
    solution may have written into the trial's."""
    inputs = kernelbench_inputs(ctx, seed)
    noise = rounding_sensitivity(ctx, model_outputs(ctx, ref_model, inputs), [0], {0: output}, (tol, tol))[0]
    del inputs
    if isinstance(noise, str):
        return {"unavailable": noise}
    within = trial["max_abs"] <= 2 * noise.max_abs + tol and (
        noise.outside == 0 or trial["outside"] <= 2 * noise.outside)
    return {"reference_jitter_max_abs": noise.max_abs, "reference_jitter_outside": noise.outside,
            "jitter_ulps": JITTER_ULPS, "jitter": jitter_words(protocol_dtype(ctx)), "draws": DRAWS,
            "solution_within_noise": within}


def stage_kernelbench(ctx: Context) -> None:
    trials = int(ctx.config.get("kernelbench_trials", DEFAULT_TRIALS))
    dtype = protocol_dtype(ctx)
    tol = TOLERANCE[dtype]
    about = {"precision": dtype_name(dtype), "protocol": PROTOCOL.format(tol=tol, precision=dtype_name(dtype)),
             **({"note": NO_AUTOCAST} if ctx.autocast is not None else {}),
             **({"layout_note": NO_CHANNELS_LAST} if ctx.layout else {})}
    given = ctx.config.get("init_args")
    if given is not None:
        init = list(given)
    else:
        set_seed(ctx.seed)
        init = list(ctx.ref_mod.get_init_inputs())
    if same_value(init, ctx.init) and not ctx.layout:
        ref_model, new_model = ctx.ref_model, ctx.new_model   # constructed exactly so (setup.stage_parameters)
    else:
        with torch.no_grad():
            ref_model = ctx.construct(ctx.ref_mod.Model, init=init, layout=False)
            new_model = ctx.construct(ctx.new_mod.ModelNew, init=init, layout=False)
    results = []
    for n, seed in enumerate(trial_seeds(ctx.seed, trials)):
        progress(f"KernelBench trial {n + 1} of {trials}")
        inputs = kernelbench_inputs(ctx, seed)
        with torch.no_grad():
            try:
                output = outputs_of(ref_model(*inputs))
                fails = None if len(output) == 1 else (
                    f"the reference returns {len(output)} outputs, where KernelBench compares one tensor")
            except RuntimeError as error:
                fails = f"it casts every input tensor to {str(dtype).replace('torch.', '')} ({reference_error(error)})"
            if fails is not None:   # KernelBench would fail the reference itself: no verdict on the solution
                ctx.results.put("kernelbench", {"correct": None, "reference_fails": fails,
                                                "tolerance": tol, "trials": [], "num_correct_trials": trials,
                                                "init_args": init, "seed": ctx.seed, **about})
                return
            ctx.sync()
            output_new = outputs_of(new_model(*inputs))
            ctx.sync()
        single = len(output) == 1 and len(output_new) == 1
        trial = compare_trial(output[0], output_new[0], tol) if single else {
            "ok": False, "problem": f"{len(output)} and {len(output_new)} outputs, KernelBench compares one tensor"}
        if not trial["ok"] and "max_abs" in trial and not trial["nan"] and \
                not any("floor" in t for t in results):   # measured once, on the first trial that misses
            trial["floor"] = reference_floor(ctx, ref_model, seed, output[0], trial, tol)
        results.append({"seed": seed, **trial})
        del inputs, output, output_new
        ctx.free()
        if "shape mismatch" in trial.get("problem", ""):
            break   # run_and_check_correctness returns at the first shape mismatch
    ctx.results.put("kernelbench", {
        "correct": all(t["ok"] for t in results) and len(results) == trials, "tolerance": tol,
        "trials": results, "num_correct_trials": trials, "init_args": init, "seed": ctx.seed,
        "inputs": "torch.rand inputs of the given shapes" if ctx.config.get("input_shapes")
        else "reference's get_inputs()", **about})
