"""Reliability tables, on a GPU: RELIABILITY.md and (--json) the same as JSON.

    python3 benchmarks/reliability.py [--out RELIABILITY.md] [--json out.json]
        [--sanitize-dir .build/sanitize] [--sections numerics,families,memory,validator,sanitizer,family_sanitizer]
        [--families NAME,...] [--budget SECONDS] [--merge earlier.json] [--no-huge]

Sections (each written to the file as soon as it is done, so a time limit leaves what was found; --merge keeps
the sections of an earlier JSON that this run does not produce, and the table says where they ran):
 (a) numerics: every golden file in generated/ x every case below. The solution, its reference and a
     float64 copy of the reference run forward AND backward on the same input and upstream gradient; the
     output and EVERY gradient (input and parameters) is compared:
       PASS       each tensor agrees with the reference within the file's tolerance (1e-4; 1e-2 for
                  --conv fast, whose header says it is not equivalent at 1e-4), or is no more than twice as
                  far from float64 as the reference is (+ tol: a TF32 reference is itself ~3e-3 off);
                  NaN/Inf exactly where the reference (or float64) has them; --conv fused (kgen's TF32
                  convolution, where cuDNN's reference runs float32 at small shapes): within 1e-2 of float64,
                  parameter gradients within 3e-2 of float64 times max(1, their largest magnitude)
       WRONG      anything else: a different answer, a NaN/Inf pattern that is neither the reference's nor
                  float64's, a wrong shape, a missing gradient (the cell that must never appear)
       CRASH      the solution raised on valid input (message recorded)
       RAISES-OK  invalid input: the solution raised, and so does the reference (message recorded)
       REFUSED    the reference accepts this input, the solution raises a clear error instead
       ACCEPTED   invalid input the reference rejects but the solution accepted (a failure)
 (a2) families: every kernel family of kgen.bench.families (its emitted file in .build/families/,
     emitted here if missing, at the small shape where the host code launches the family's kernels): the same
     judge on random, normal and NaN-poisoned inputs, then the launch check:
       LAUNCHED      every kernel of the family is among those torch.profiler saw in one forward + backward
                     and one forward under no_grad
       NOT LAUNCHED  "family kernels not launched": the shape took another path (a failure)
 (b) memory and build-once: 1,000 forward+backward iterations per golden file (memory_allocated after
     iteration 10 == after 1,000); the same file executed twice in one process (no ninja run, < 5 s, same
     extension); two different emitted files in one process (different extensions, both correct);
     kgen.bench.runtime_checks
 (c) validator: every adversarial file of tests/validate/adversarial.py (static files: static verdicts;
     runtime files: the runner child on "cuda"; GPU files: the whole validate()) -> expected and observed
     exit code, seconds, leftover processes
 (d) sanitizer: the runs of benchmarks/sanitize.sh on files found in --sanitize-dir (its runs.tsv and logs)
 (d2) family_sanitizer: its runs on the families (targets family:NAME), with their probes
Verdicts that explain a sanitizer report not about kgen's kernels, each only with its evidence from the same run:
LIBRARY-WRITES (initcheck does not see cuDNN's writes), BULK-STORES (nor Hopper bulk stores'); PROBE: a probe's
run. NOT RUN: what the time budget (--budget, or the step's timeout) did not reach.
Exit status 1 if any cell is a failure (WRONG, CRASH, ACCEPTED, NOT LAUNCHED, memory growth, a build reused
wrongly, a validator verdict other than expected or a leftover process, a sanitizer run not clean, NOT RUN).
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from kgen.golden import GENERATED, GOLDEN
from kgen.header import parse_header
from kgen.specs import get_spec

ATOL = RTOL = 1e-4
SANITIZER_TOOLS = ("memcheck", "racecheck", "initcheck", "synccheck")
# The sanitizer runs' evidence scripts under benchmarks/ (benchmarks/sanitize.sh queues them):
FAST_MODE_PROBE = "sanitize_fast_mode.py"      # initcheck on cuDNN's channels-last output and on our fast kernels
BULK_STORE_PROBE = "sanitize_bulk_stores.py"   # the one-pass forward's y in NaN-filled memory, every value overwritten


@dataclass
class Row:
    solution: str
    case: str
    verdict: str
    err_ref: float | None = None
    err_fp64: float | None = None
    ref_err_fp64: float | None = None
    message: str = ""
    tol: float | None = None


def load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def build(cls, init, seed=0):
    torch.manual_seed(seed)
    return cls(*init).cuda()


def tolerance_for(params: dict) -> float:
    """1e-4, or 1e-2 for a variant whose header says it is not equivalent at 1e-4 (--conv fast; --conv fused,
    judged in the "tf32" mode: judge_mode)."""
    return 1e-2 if params.get("conv") in ("fast", "fused") else ATOL


def judge_mode(params: dict) -> str:
    """"tf32" for --conv fused (kgen's TF32 convolution, where cuDNN's reference picks float32 algorithms at small
    shapes: compared with float64 at TF32's tolerance, compare_tensor), else "default"."""
    return TF32 if params.get("conv") == "fused" else "default"


def max_err(a: torch.Tensor, b: torch.Tensor) -> float:
    """max |a - b| (in float64) over the elements where both are finite."""
    if a.numel() == 0:
        return 0.0
    both = torch.isfinite(a) & torch.isfinite(b)
    d = (a.double() - b.double()).abs()[both]
    return float(d.max()) if d.numel() else 0.0


def special_pattern(t: torch.Tensor) -> torch.Tensor:
    """0 finite, 1 NaN, 2 +Inf, 3 -Inf, per element."""
    return t.isnan().to(torch.int8) + 2 * t.isposinf().to(torch.int8) + 3 * t.isneginf().to(torch.int8)


def forward_backward(model, x, dtype, seed: int = 1) -> tuple[torch.Tensor, dict]:
    """Output and {name: gradient} (every floating-point input and every parameter), with an upstream gradient
    drawn from its own generator in float32 (the same numbers for every model and dtype). x: one tensor, or the
    list of a model's inputs (Python numbers passed as they are)."""
    many = isinstance(x, (list, tuple))
    given = list(x) if many else [x]
    args = [t.detach().clone().to(dtype).requires_grad_() if isinstance(t, torch.Tensor) and t.is_floating_point()
            else t for t in given]
    y = model(*args)
    generator = torch.Generator(device=y.device)
    generator.manual_seed(seed)
    upstream = torch.randn(y.shape, generator=generator, device=y.device, dtype=torch.float32).to(dtype)
    y.backward(upstream)
    tensors = [(i, a) for i, a in enumerate(args) if isinstance(a, torch.Tensor) and a.requires_grad]
    grads = {("input" if len(tensors) == 1 else f"input {i}"): a.grad for i, a in tensors}
    grads.update({name: p.grad for name, p in model.named_parameters()})
    model.zero_grad(set_to_none=True)
    return y.detach(), grads


TF32 = "tf32"
TF32_TOL, TF32_PARAM_TOL = 1e-2, 3e-2


def compare_tensor(name: str, new, ref, exact, tol: float, mode: str = "default") -> tuple[bool, float, float, float, str]:
    """(ok, err vs reference, err vs float64, reference's err vs float64, problem) for one tensor.
    mode "tf32" (a TF32 convolution the reference does not run: --conv fused, whose cuDNN reference picks float32
    algorithms at small shapes): the tensor within 1e-2 of float64 (atol and rtol), a parameter gradient (a sum
    over the batch) within 3e-2 of float64 times max(1, its largest magnitude), as tests/gpu/test_convt_gelu_groupnorm.py
    holds it."""
    if isinstance(new, str):   # "only-solution" / "only-reference": a parameter the other model lacks
        return False, math.nan, math.nan, math.nan, f"{name}: a parameter only in the {new[5:]}"
    if new is None or ref is None or exact is None:
        if new is None and ref is None:
            return True, 0.0, 0.0, 0.0, ""
        return False, math.nan, math.nan, math.nan, f"{name}: gradient missing in the " + (
            "solution" if new is None else "reference" if ref is None else "float64 reference")
    if new.shape != ref.shape or new.shape != exact.shape:
        return False, math.nan, math.nan, math.nan, f"{name}: shape {tuple(new.shape)} vs reference {tuple(ref.shape)}"
    pattern = special_pattern(new)
    pattern_ok = torch.equal(pattern, special_pattern(ref)) or torch.equal(pattern, special_pattern(exact))
    err_ref, err_64, ref_64 = max_err(new, ref), max_err(new, exact), max_err(ref, exact)
    if mode == TF32:
        parameter = name.startswith("grad ") and not name.startswith("grad input")
        finite = torch.isfinite(new) & torch.isfinite(exact)
        scale = float(exact[finite].abs().max()) if bool(finite.any()) else 0.0
        rtol = TF32_PARAM_TOL if parameter else TF32_TOL
        atol = rtol * max(1.0, scale) if parameter else rtol
        close = torch.allclose(new[finite].double(), exact[finite].double(), atol=atol, rtol=rtol)
        beyond = f"{name}: max err {err_64:.2e} vs float64 beyond TF32's {atol:.1e} + {rtol:.0e} x |value|"
    else:
        finite = torch.isfinite(new) & torch.isfinite(ref)
        close = torch.allclose(new[finite], ref[finite], atol=tol, rtol=tol) or err_64 <= 2 * ref_64 + tol
        beyond = f"{name}: max err {err_ref:.2e} vs reference, {err_64:.2e} vs float64 (reference {ref_64:.2e})"
    ok = pattern_ok and close
    problem = "" if ok else (
        f"{name}: NaN/Inf where neither the reference nor float64 has them (or missing)" if not pattern_ok else beyond)
    return ok, err_ref, err_64, ref_64, problem


def judge(new_model, ref_model, x, tol: float = ATOL, reference_channels_last: bool = False,
          mode: str = "default") -> tuple[str, float, float, float, str]:
    """Forward and backward of the solution, the reference and a float64 copy of the reference on x (a tensor,
    or the list of the models' inputs): the output and every gradient (inputs and parameters, matched by name)
    compared. reference_channels_last: the float32 reference gets 4-D inputs in channels-last memory, so it runs
    the same cuDNN kernels as a --conv fast solution (whose TF32 weight gradient differs from the NCHW one; the
    float64 copy stays NCHW). mode: "default", or "tf32" (compare_tensor)."""
    new_y, new_g = forward_backward(new_model, x, torch.float32)

    def channels_last(t):
        return t.contiguous(memory_format=torch.channels_last) if isinstance(t, torch.Tensor) and t.dim() == 4 else t

    x_ref = x
    if reference_channels_last:
        x_ref = [channels_last(t) for t in x] if isinstance(x, (list, tuple)) else channels_last(x)
    ref_y, ref_g = forward_backward(ref_model, x_ref, torch.float32)
    y64, g64 = forward_backward(_double_copy(ref_model), x, torch.float64)
    tensors = [("output", new_y, ref_y, y64)]
    for key in list(ref_g) + [k for k in new_g if k not in ref_g]:
        if key not in new_g or key not in ref_g:
            where = "solution" if key in new_g else "reference"
            tensors.append((f"grad {key}", "only-" + where, None, None))
            continue
        tensors.append((f"grad {key}", new_g[key], ref_g[key], g64.get(key)))
    oks, problems, errs = [], [], []
    for name, new, ref, exact in tensors:
        ok, e_ref, e_64, r_64, problem = compare_tensor(name, new, ref, exact, tol, mode)
        oks.append(ok)
        errs.append((e_ref, e_64, r_64))
        if problem:
            problems.append(problem)
    def worst(i: int) -> float:
        values = [e[i] for e in errs]
        return math.nan if any(math.isnan(v) for v in values) else max(values)

    verdict = "PASS" if all(oks) else "WRONG"
    message = "; ".join(problems[:3]) if problems else f"{len(tensors)} tensors compared (output + gradients)"
    return verdict, worst(0), worst(1), worst(2), message


def _double_copy(model):
    import copy

    return copy.deepcopy(model).double()


def settle() -> None:
    """Wait for the device and free cached memory; a sticky CUDA error surfaces in the next row instead."""
    try:
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
    except Exception as error:
        print(f"reliability: device error after a case: {first_line(error)}", flush=True)


def first_line(error: BaseException) -> str:
    text = str(error).strip()
    return (text.splitlines()[0] if text else type(error).__name__)[:160]


def small_problem(spec_name: str, params: dict) -> tuple[list, tuple]:
    """Init args and an input shape a few MB large, keeping the spec's channel and group structure."""
    spec = get_spec(spec_name)
    init = spec.init_args_for(params)
    shape = list(spec.input_shapes[0])
    shape[0] = 2
    shape[2:] = [min(d, 24) for d in shape[2:]]
    return init, tuple(shape)


def with_init(spec_name: str, init: list, **changes) -> list:
    names = list(get_spec(spec_name).init_args)
    values = dict(zip(names, init))
    values.update(changes)
    return list(values.values())


def no_tweak(model):
    return model


def zero_conv_weights(model):
    """Conv weights zeroed: the conv output is its bias, constant per channel, so every GroupNorm group
    of a one-channel-per-group model has zero variance."""
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, (torch.nn.Conv2d, torch.nn.ConvTranspose2d)):
                module.weight.zero_()
    return model


def valid_cases(spec_name: str, params: dict):
    """(case name, init args, input maker[, parameter tweak]) for inputs the reference accepts."""
    spec = get_spec(spec_name)
    init, shape = small_problem(spec_name, params)
    channels = dict(zip(spec.init_args, init))[spec.channels_arg]
    yield "rand (reference distribution)", init, lambda: torch.rand(shape, device="cuda")
    yield "large offset 1e4 + 1e-2 randn", init, lambda: 1e4 + 1e-2 * torch.randn(shape, device="cuda")
    yield "constant input", init, lambda: torch.full(shape, 0.75, device="cuda")
    if spec_name != "groupnorm":
        yield "zero-variance groups (conv weights zeroed, one channel per group)", \
            with_init(spec_name, init, **{spec.groups_arg: channels}), lambda: torch.rand(shape, device="cuda"), \
            zero_conv_weights
    yield "NaN in the input", init, lambda: _poison(torch.rand(shape, device="cuda"), math.nan)
    yield "+Inf in the input", init, lambda: _poison(torch.rand(shape, device="cuda"), math.inf)
    yield "N = 1", init, lambda: torch.rand((1,) + shape[1:], device="cuda")
    spatial_one = (shape[0], shape[1]) + (1,) * (len(shape) - 2)
    if spec_name == "groupnorm":
        yield "H = W = 1", init, lambda: torch.rand(spatial_one, device="cuda")
    yield "groups = 1", with_init(spec_name, init, **{spec.groups_arg: 1}), lambda: torch.rand(shape, device="cuda")
    yield "groups = channels", with_init(spec_name, init, **{spec.groups_arg: channels}), \
        lambda: torch.rand(shape, device="cuda")
    yield "channels-last input", init, \
        lambda: torch.rand(shape, device="cuda").contiguous(memory_format=torch.channels_last)
    yield "non-contiguous (transposed) input", init, \
        lambda: torch.rand(shape[:2] + shape[2:][::-1], device="cuda").transpose(-1, -2)


def _poison(x: torch.Tensor, value: float) -> torch.Tensor:
    x.view(-1)[x.numel() // 3] = value
    return x


def invalid_cases(shape: tuple):
    yield "CPU tensor", lambda: torch.rand(shape)
    yield "wrong rank", lambda: torch.rand(shape[1:], device="cuda")
    yield "wrong channel count", lambda: torch.rand((shape[0], shape[1] + 1) + shape[2:], device="cuda")
    yield "float16", lambda: torch.rand(shape, device="cuda", dtype=torch.float16)
    yield "bfloat16", lambda: torch.rand(shape, device="cuda", dtype=torch.bfloat16)


def run_solution(file_name: str, spec_name: str, params: dict, reference) -> list[Row]:
    rows = []
    tol = tolerance_for(params)
    module = load(GENERATED / file_name, "solution_" + Path(file_name).stem)
    for case, init, make, *tweak in valid_cases(spec_name, params):
        tweak = tweak[0] if tweak else no_tweak
        new = ref = x = None
        try:   # construction inside: a solution that cannot be built for these init args is a CRASH row
            new, ref = tweak(build(module.ModelNew, init)), tweak(build(reference.Model, init))
            x = make()
            verdict, e_ref, e_64, r_64, message = judge(new, ref, x, tol,
                                                        reference_channels_last=params.get("conv") == "fast",
                                                        mode=judge_mode(params))
            rows.append(Row(file_name, case, verdict, e_ref, e_64, r_64, message if verdict != "PASS" else "", tol))
        except Exception as error:  # the table records it; this harness is not a solution file
            rows.append(Row(file_name, case, "CRASH", message=first_line(error), tol=tol))
        del new, ref, x
        settle()
    init, shape = small_problem(spec_name, params)
    new, ref = build(module.ModelNew, init), build(reference.Model, init)
    for case, make in invalid_cases(shape):
        rows.append(invalid_row(file_name, case, new, ref, make, tol))
    if torch.cuda.device_count() > 1:
        try:
            # cuda:0 stays the current device: the kernels' device guard must follow the input
            other = build(module.ModelNew, init).to("cuda:1")
            ref1 = build(reference.Model, init).to("cuda:1")
            x1 = torch.rand(shape, device="cuda:1")
            err = max_err(other(x1), ref1(x1))
            rows.append(Row(file_name, "model and input on a second GPU", "PASS" if err <= tol else "WRONG",
                            err, tol=tol))
        except Exception as error:
            rows.append(Row(file_name, "model and input on a second GPU", "CRASH", message=first_line(error), tol=tol))
    else:
        rows.append(Row(file_name, "model and input on a second GPU", "SKIP", message="one GPU", tol=tol))
    return rows


def invalid_row(file_name: str, case: str, new, ref, make, tol: float) -> Row:
    """An input the contract does not promise to support: the solution must raise if the reference does;
    if the reference accepts it, the solution must either raise a clear error or agree."""
    x = make()
    outs, errors = [], []
    for model in (new, ref):
        try:
            with torch.no_grad():
                outs.append(model(x))
            if torch.cuda.is_available():
                torch.cuda.synchronize()   # an asynchronous error belongs to this model's call
            errors.append(None)
        except Exception as error:
            outs.append(None)
            errors.append(error)
    new_error, ref_error = errors
    if new_error is not None and ref_error is not None:
        return Row(file_name, case, "RAISES-OK", message=first_line(new_error), tol=tol)
    if new_error is not None:
        return Row(file_name, case, "REFUSED", message="reference accepts; solution raises: " + first_line(new_error),
                   tol=tol)
    if ref_error is not None:
        return Row(file_name, case, "ACCEPTED", message="reference raises (" + first_line(ref_error)
                   + "); the solution returned a result", tol=tol)
    new_y, ref_y = outs
    if new_y.shape != ref_y.shape:
        return Row(file_name, case, "WRONG", message=f"both accept; shapes {tuple(new_y.shape)} vs {tuple(ref_y.shape)}",
                   tol=tol)
    err = max_err(new_y.float(), ref_y.float())
    same = torch.equal(special_pattern(new_y), special_pattern(ref_y))
    return Row(file_name, case, "PASS" if same and err <= tol else "WRONG", err,
               message="both accept (forward compared)", tol=tol)


def huge_groupnorm(module, reference) -> Row:
    """More than 2^31 elements (64-bit indexing): 4 x 64 x 2900 x 2900 = 2.15e9."""
    case = "> 2^31 elements (forward, last sample)"
    try:
        new, ref = build(module.ModelNew, [64, 8]), build(reference.Model, [64, 8])
        with torch.no_grad():
            x = torch.rand((4, 64, 2900, 2900), device="cuda")
            y = new(x)
            err = max_err(y[-1], ref(x[-1:])[0])   # the last sample lies beyond element 2^31
            finite = bool(torch.isfinite(y[-1]).all())
        del x, y
        torch.cuda.empty_cache()
        return Row("groupnorm.py", case, "PASS" if finite and err < ATOL else "WRONG", err, tol=ATOL)
    except Exception as error:
        torch.cuda.empty_cache()
        return Row("groupnorm.py", case, "CRASH", message=first_line(error), tol=ATOL)


# ---- (a2) kernel families ------------------------------------------------------------------------------

def family_cases(shapes: tuple):
    """(case, maker of the inputs) for a family's input shapes; the first is the launch check's."""
    def poisoned():
        inputs = [torch.rand(s, device="cuda") for s in shapes]
        _poison(inputs[0], math.nan)
        return inputs

    yield "rand (reference distribution)", lambda: [torch.rand(s, device="cuda") for s in shapes]
    yield "randn", lambda: [torch.randn(s, device="cuda") for s in shapes]
    yield "NaN in the input", poisoned


def profiled_kernels(model, inputs: list) -> list[str]:
    """The CUDA kernels (profiler names) of one forward + backward and one forward under no_grad, after a
    warm-up of each."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    def run():
        forward_backward(model, inputs, torch.float32)
        with torch.no_grad():
            model(*inputs)

    run()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        run()
        torch.cuda.synchronize()
    names = {e.name for e in prof.events() if e.device_type == DeviceType.CUDA}
    for e in prof.events():   # profilers that list a CPU event's kernels with it
        names.update(getattr(k, "name", str(k)) for k in getattr(e, "kernels", None) or ())
    return sorted(names)


def _family_row(f, source, case: str, verdict: str, **extra) -> dict:
    row = {"family": f.name, "title": f.title, "source": source.key, "command": source.command,
           "init": list(f.init), "inputs": [list(s) for s in f.inputs], "case": case, "verdict": verdict,
           "tol": None, "err_ref": None, "err_fp64": None, "ref_err_fp64": None, "message": "", "kernels": []}
    row.update(extra)
    return row


_FAMILY_MODULES: dict = {}


def run_family(f) -> list[dict]:
    """Numerics rows of one family at its shape (solution vs reference and float64, output and every gradient),
    then the launch check: every kernel of f.kernels among those one forward + backward (and a no_grad forward)
    launched, else the row "family kernels not launched" (NOT LAUNCHED, a failure)."""
    from kgen.bench.families import emit_source, source_of

    source = source_of(f)
    if not source.path.exists():
        emit_source(source.key)
    tol = 1e-2 if f.judge in ("fast", TF32) else ATOL
    mode = TF32 if f.judge == TF32 else "default"
    if source.key not in _FAMILY_MODULES:   # one import per source: families share files
        try:
            _FAMILY_MODULES[source.key] = (load(source.path, "family_" + source.key),
                                           load(GENERATED.parent / source.reference, "family_reference_" + source.key))
        except Exception as error:  # a file that does not build or import: its families' rows say so
            _FAMILY_MODULES[source.key] = error
    if isinstance(_FAMILY_MODULES[source.key], Exception):
        return [_family_row(f, source, "(all)", "CRASH", tol=tol,
                            message=f"{source.path.name} did not build or import: "
                                    + first_line(_FAMILY_MODULES[source.key]))]
    module, reference = _FAMILY_MODULES[source.key]
    rows = []
    for case, make in family_cases(f.inputs):
        new = ref = x = None
        try:
            new, ref = build(module.ModelNew, list(f.init)), build(reference.Model, list(f.init))
            x = make()
            verdict, e_ref, e_64, r_64, message = judge(new, ref, x, tol, reference_channels_last=f.judge == "fast",
                                                        mode=mode)
            rows.append(_family_row(f, source, case, verdict, tol=tol, err_ref=e_ref, err_fp64=e_64,
                                    ref_err_fp64=r_64, message=message if verdict != "PASS" else ""))
        except Exception as error:  # the table records it
            rows.append(_family_row(f, source, case, "CRASH", tol=tol, message=first_line(error)))
        del new, ref, x
        settle()
    case = "family kernels launched (forward + backward, and a no_grad forward)"
    try:
        model = build(module.ModelNew, list(f.init))
        names = profiled_kernels(model, next(iter(family_cases(f.inputs)))[1]())
        ours = [n for n in names if "kgen::" in n]
        from kgen.bench.families import kernel_launched

        missing = [k for k in f.kernels if not kernel_launched(k, names)]
        short = sorted({_short_kernel(n) for n in ours})
        if missing:
            rows.append(_family_row(f, source, case, "NOT LAUNCHED", kernels=names,
                                    message="family kernels not launched: " + ", ".join(missing)
                                    + "; kgen kernels launched: " + (", ".join(short) or "none")))
        elif not names:
            rows.append(_family_row(f, source, case, "CRASH", message="the profiler saw no CUDA kernel"))
        else:
            rows.append(_family_row(f, source, case, "LAUNCHED", kernels=names,
                                    message="kgen kernels launched: " + ", ".join(short)))
        del model
    except Exception as error:
        rows.append(_family_row(f, source, case, "CRASH", message=first_line(error)))
    settle()
    return rows


def _short_kernel(name: str) -> str:
    """`void kgen::region_nhwc::apply_kernel<...>(...)` -> `region_nhwc::apply_kernel`."""
    text = name.split("(")[0].split("<")[0].replace("void ", "").strip()
    return text[len("kgen::"):] if text.startswith("kgen::") else text


def family_rows(on_row=lambda rows: None, only=None) -> list[dict]:
    """Every family of kgen.bench.families (or those named in `only`). Each is listed from the start
    as NOT RUN and replaced by its rows when it has run, with on_row(rows) after each, so a run cut by its time
    limit (--budget, or the step's timeout) still leaves every family in the table."""
    from kgen.bench.families import FAMILIES, source_of

    chosen = [f for f in FAMILIES if not only or f.name in only]
    done = {f.name: [_family_row(f, source_of(f), "(all)", "NOT RUN", message="the time budget ran out first")]
            for f in chosen}

    def flat() -> list[dict]:
        return [r for f in chosen for r in done[f.name]]

    on_row(flat())
    for f in chosen:
        if out_of_time():
            break
        try:
            done[f.name] = run_family(f)
        except Exception as error:  # the table records it; the other families still run
            done[f.name] = [_family_row(f, source_of(f), "(all)", "CRASH", message=first_line(error))]
        for r in done[f.name]:
            print(f"family {r['family']:18s} {r['verdict']:12s} {r['case'][:50]:50s} {_fmt(r['err_ref']):9s} "
                  f"{r['message'][:100]}", flush=True)
        on_row(flat())
    return flat()


# ---- (b) memory and build-once --------------------------------------------------------------------------

def memory_rows(iterations: int) -> list[dict]:
    from kgen.bench.runtime_checks import memory_check

    rows = []
    for file_name in GOLDEN:
        if out_of_time():
            rows.append({"check": f"memory: {iterations} x forward+backward", "subject": file_name,
                         "verdict": "NOT RUN", "detail": "the time budget ran out first", "data": {}})
            continue
        try:
            r = memory_check(GENERATED / file_name, iterations=iterations)
            rows.append({"check": f"memory: {iterations} x forward+backward", "subject": file_name,
                         "verdict": "PASS" if r["ok"] else "FAIL",
                         "detail": f"allocated after iteration {r['probe']}: {r['allocated_at_probe']} B, after "
                                   f"{iterations}: {r['allocated_at_end']} B ({r['seconds']:.1f} s)", "data": r})
        except Exception as error:
            rows.append({"check": f"memory: {iterations} x forward+backward", "subject": file_name,
                         "verdict": "CRASH", "detail": first_line(error), "data": {}})
        torch.cuda.empty_cache()
    return rows


def build_rows() -> list[dict]:
    from kgen.bench.prebuild import emit_to_file
    from kgen.bench.runtime_checks import build_once, two_files

    rows = []
    try:
        r = build_once(GENERATED / "groupnorm.py")
        rows.append({"check": "build once: same file executed twice in one process", "subject": "groupnorm.py",
                     "verdict": "PASS" if r["ok"] else "FAIL",
                     "detail": f"loads {r['first_load_s']:.2f} s then {r['second_load_s']:.2f} s; ninja runs "
                               f"{r['ninja_runs_first']} then {r['ninja_runs_second']}; extension {r['extension'][1]}",
                     "data": r})
    except Exception as error:
        rows.append({"check": "build once: same file twice", "subject": "groupnorm.py", "verdict": "CRASH",
                     "detail": first_line(error), "data": {}})
    try:
        paths = [emit_to_file("groupnorm", {"groups": 8}), emit_to_file("groupnorm", {"groups": 4})]
        r = two_files(paths)
        rows.append({"check": "build once: two different emitted files in one process",
                     "subject": "groupnorm --groups 8 / --groups 4", "verdict": "PASS" if r["ok"] else "FAIL",
                     "detail": f"extensions {r['extensions']}; max err vs reference "
                               + ", ".join(f"{e:.2e}" for e in r["max_err"]), "data": r})
    except Exception as error:
        rows.append({"check": "build once: two different emitted files", "subject": "groupnorm g8/g4",
                     "verdict": "CRASH", "detail": first_line(error), "data": {}})
    return rows


# ---- (c) validator ----------------------------------------------------------------------------------------

def validator_rows(on_row=lambda rows: None) -> list[dict]:
    """One row per adversarial file; every file is listed from the start as NOT RUN and `on_row(rows)` is
    called after each run, so a step cut by its time limit still leaves a complete table."""
    from tests.validate.adversarial import all_cases, judge as judge_case, run_case

    cases = list(all_cases())
    rows = [{"file": case.path.name, "mode": case.mode, "defect": case.defect, "expected": case.exit,
             "observed": None, "seconds": None, "leftover": None, "verdict": "NOT RUN", "failed_checks": [],
             "detail": "the step's time ran out first"} for case in cases]
    for index, case in enumerate(cases):
        if out_of_time():
            break   # the rest stay NOT RUN
        try:
            outcome = run_case(case)
            problems = judge_case(case, outcome.code, outcome.failed)
            if outcome.leftovers:
                problems.append(f"leftover processes {outcome.leftovers}")
            rows[index] = {"file": case.path.name, "mode": case.mode, "defect": case.defect,
                           "expected": case.exit, "observed": outcome.code, "seconds": round(outcome.seconds, 1),
                           "leftover": bool(outcome.leftovers), "verdict": "OK" if not problems else "MISMATCH",
                           "failed_checks": outcome.failed, "detail": "; ".join(problems) or outcome.detail}
        except Exception as error:
            rows[index] = {"file": case.path.name, "mode": case.mode, "defect": case.defect, "expected": case.exit,
                           "observed": None, "seconds": None, "leftover": None, "verdict": "CRASH",
                           "failed_checks": [], "detail": first_line(error)}
        print(f"validator {case.mode:7s} {case.path.name:45s} expected {case.exit} observed "
              f"{rows[index]['observed']} {rows[index]['verdict']}", flush=True)
        on_row(rows)
    return rows


# ---- (d) sanitizer ------------------------------------------------------------------------------------------

def _sanitizer_row(r) -> dict:
    return {"file": r.file, "tool": r.tool, "exit": r.exit, "errors": r.errors, "seconds": r.seconds,
            "verdict": "CLEAN" if r.clean else "REPORTED", "where": r.where(), "racecheck": r.racecheck,
            "log": r.log, "script": r.script_line, "ours": sum(r.ours.values())}


def sanitizer_rows(logdir: Path | None) -> list[dict]:
    """The runs of the files (generated/, .build/) in a sanitize.sh log directory and their probes; the kernel
    families' runs (family:NAME) are family_sanitizer_rows'."""
    from kgen.bench.families import is_target
    from kgen.bench.sanitizer_logs import summarize

    if logdir is None:
        return []
    rows = [_sanitizer_row(r) for r in summarize(logdir) if not is_target(r.file)]
    library_writes_explained(rows)
    bulk_stores_explained(rows)
    done = {(r["file"], r["tool"]) for r in rows}
    for file_name in GOLDEN:   # a run that never finished (the step's time limit) is a row too, not a gap
        for tool in SANITIZER_TOOLS:
            if (f"generated/{file_name}", tool) not in done:
                rows.append({"file": f"generated/{file_name}", "tool": tool, "exit": None, "errors": None,
                             "seconds": None, "verdict": "NOT RUN", "where": "", "racecheck": "", "log": "",
                             "script": ""})
    return rows


def library_writes_explained(rows: list[dict]) -> None:
    """initcheck cannot see cuDNN's writes of a channels-last conv output (H100: sm90 kernels), so every read
    of it is reported, by whichever kernel reads it. The verdict of the --conv fast initcheck run becomes
    LIBRARY-WRITES, not a failure, only when both probes agree: PyTorch's own reduction over that output is
    reported too, AND our fast-mode kernels on PyTorch-written inputs report 0 errors."""
    probes = {r["tool"]: r for r in rows if r["file"].endswith(FAST_MODE_PROBE)}
    pytorch, kernels = probes.get("initcheck-probe-pytorch"), probes.get("initcheck-probe-kernels")
    for r in probes.values():   # a probe is evidence, not a verdict on a solution
        r["verdict"] = "PROBE"
    if not (pytorch and kernels and (pytorch["errors"] or 0) > 0 and kernels["errors"] == 0):
        return
    for r in rows:
        if r["file"].endswith("_fast.py") and r["tool"] == "initcheck" and r["verdict"] == "REPORTED":
            r["verdict"] = "LIBRARY-WRITES"
            r["where"] += ("; the same reads are reported for PyTorch's own sum over cuDNN's channels-last output "
                           f"(probe: {pytorch['errors']} errors) and our fast-mode kernels on PyTorch-written "
                           "inputs report 0: initcheck does not see cuDNN's writes")


BULK_STORE = "cp.async.bulk.global.shared"


def bulk_stores_explained(rows: list[dict], root: Path = GENERATED.parent) -> None:
    """initcheck does not register the writes of Hopper bulk (TMA) stores (benchmarks/sanitize_bulk_stores.py:
    y prefilled with NaN comes back all overwritten). The one-pass GroupNorm forward writes y only that way, so
    PyTorch's kernels reading y afterwards are reported. The verdict of such an initcheck run becomes
    BULK-STORES, not a failure, only when all three hold: the file's kernels do use bulk stores and no report
    names one of our kernels; the two-pass build of the same kernels (.build/<name>_twopass.py) is CLEAN under
    initcheck in the same run; and the bulk-store probe (sanitize_bulk_stores.py one-pass, every value
    of a NaN-filled y overwritten and equal to the two-pass result) exited 0 in the same run."""
    probe = next((r for r in rows if r["file"].endswith(BULK_STORE_PROBE)), None)
    if probe is not None:
        probe["verdict"] = "PROBE"
    clean = {(r["file"], r["tool"]) for r in rows if r["verdict"] == "CLEAN"}
    for r in rows:
        if r["tool"] != "initcheck" or r["verdict"] != "REPORTED" or "OURS" in r["where"]:
            continue
        path = root / r["file"]
        twopass = f".build/{path.stem}_twopass.py"
        uses_bulk = path.is_file() and BULK_STORE in path.read_text()
        if uses_bulk and (twopass, "initcheck") in clean and probe is not None and probe["exit"] == 0:
            r["verdict"] = "BULK-STORES"
            r["where"] += (f"; y is written only by bulk (TMA) stores, which initcheck does not register: {twopass} "
                           "(the same kernels, two passes) is clean and the bulk-store probe finds every value of "
                           "y written")


PROBE_TOOLS = ("initcheck-library-probe", "initcheck-reference-probe", "bulk-store-probe")


def family_sanitizer_rows(logdir: Path | None) -> list[dict]:
    """The kernel families' runs (targets family:NAME) in a sanitize.sh log directory, their probes, and the
    PyTorch probe of sanitize_fast_mode.py; every family x tool that did not run is a NOT RUN row."""
    from kgen.bench.families import FAMILIES, is_target
    from kgen.bench.sanitizer_logs import summarize

    if logdir is None:
        return []
    rows = [_sanitizer_row(r) for r in summarize(logdir)
            if is_target(r.file) or (r.file.endswith(FAST_MODE_PROBE) and r.tool == "initcheck-probe-pytorch")]
    family_reports_explained(rows)
    done = {(r["file"], r["tool"]) for r in rows}
    for f in FAMILIES:
        for tool in SANITIZER_TOOLS:
            if (f.target, tool) not in done:
                rows.append({"file": f.target, "tool": tool, "exit": None, "errors": None, "seconds": None,
                             "verdict": "NOT RUN", "where": "", "racecheck": "", "log": "", "script": "", "ours": 0})
    order = {f.target: i for i, f in enumerate(FAMILIES)}
    tools = list(SANITIZER_TOOLS) + list(PROBE_TOOLS)
    rows.sort(key=lambda r: (order.get(r["file"], -1), tools.index(r["tool"]) if r["tool"] in tools else 99))
    return rows


def library_kernels(where: str) -> set[str]:
    """The library kernels a row's "where" names ("library: a x200, b x3; ..." -> {a, b})."""
    if not where.startswith("library: "):
        return set()
    listed = where[len("library: "):].split(";")[0]
    return {part.strip().rsplit(" x", 1)[0] for part in listed.split(",") if part.strip()}


def family_reports_explained(rows: list[dict], file_of=None) -> None:
    """initcheck reports a family's run may carry that are not about its kernels, explained only with the evidence
    of the same sanitize.sh run (probes are evidence, not verdicts: PROBE):
    LIBRARY-WRITES (families with the "library-writes" probe, --conv fast): initcheck does not see cuDNN's writes
      (H100: sm90 kernels), so every read of a cuDNN output is reported, whichever kernel reads it. Explained when
      PyTorch's own sum over cuDNN's channels-last output is reported too (sanitize_fast_mode.py, errors > 0) AND
      the family's run with every cuDNN output (and gradient) copied by PyTorch before a kgen kernel reads it
      (sanitize.py --probe library-writes, under initcheck) finished and reports none of our kernels.
    LIBRARY-OWN (families with the "reference" probe): reports that name only library kernels (cuDNN, PyTorch),
      none of ours, explained when the reference alone (sanitize.py --probe reference, PyTorch without any kgen
      kernel, same init, inputs and calls) is reported by initcheck in every library kernel the family's run names.
    BULK-STORES (families with the "bulk-store" probe): initcheck does not register Hopper bulk (TMA) stores.
      Explained when no report names our kernels, the file's kernels use bulk stores, the counterpart family (the
      same file at a shape its planner takes without them) is CLEAN under initcheck, and the family's bulk-store
      probe (sanitize.py --probe bulk-store: y in NaN-filled memory, every value overwritten and equal to the
      reference) exited 0.
    file_of: a target's emitted file (default: reliability_families.target_file)."""
    from kgen.bench.families import family, is_target, target_file

    file_of = file_of or target_file
    by = {(r["file"], r["tool"]): r for r in rows}
    pytorch = next((r for r in rows if r["tool"] == "initcheck-probe-pytorch"), None)
    for r in rows:
        if r["tool"] in PROBE_TOOLS or r["tool"] == "initcheck-probe-pytorch":
            r["verdict"] = "PROBE"
    for r in rows:
        if not is_target(r["file"]) or r["tool"] != "initcheck" or r["verdict"] != "REPORTED":
            continue
        f = family(r["file"])
        if "library-writes" in f.probes:
            probe = by.get((r["file"], "initcheck-library-probe"))
            if (pytorch is not None and (pytorch["errors"] or 0) > 0 and probe is not None and probe["exit"] in (0, 9)
                    and probe["script"] and not probe["ours"] and "NOT FINITE" not in probe["script"]):
                r["verdict"] = "LIBRARY-WRITES"
                r["where"] += ("; with cuDNN's outputs and gradients copied by PyTorch before our kernels read them, "
                               f"none of our kernels is reported (probe: {probe['errors']} reports, all in library "
                               "kernels), and PyTorch's own sum over cuDNN's channels-last output is reported "
                               f"(probe: {pytorch['errors']}): initcheck does not see cuDNN's writes")
        if "reference" in f.probes and not r["ours"]:
            probe = by.get((r["file"], "initcheck-reference-probe"))
            named = library_kernels(r["where"])
            if named and probe is not None and probe["exit"] == 9 and named <= library_kernels(probe["where"]):
                r["verdict"] = "LIBRARY-OWN"
                r["where"] += (f"; the reference alone, PyTorch without any kgen kernel, is reported in the same library "
                               f"kernels (probe: {probe['errors']} reports): the library's own reads")
        if "bulk-store" in f.probes and f.counterpart and not r["ours"]:
            path = file_of(r["file"])
            counterpart = by.get((f"family:{f.counterpart}", "initcheck"))
            probe = by.get((r["file"], "bulk-store-probe"))
            uses_bulk = path.is_file() and BULK_STORE in path.read_text()
            if uses_bulk and counterpart is not None and counterpart["verdict"] == "CLEAN" and probe is not None \
                    and probe["exit"] == 0:
                r["verdict"] = "BULK-STORES"
                r["where"] += (f"; y is written only by bulk (TMA) stores, which initcheck does not register: "
                               f"family:{f.counterpart} (the same file, the planner's two-pass kernels) is clean and "
                               "the bulk-store probe finds every value of y written")


# ---- output -------------------------------------------------------------------------------------------------

def _fmt(v) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return "nan" if math.isnan(v) else f"{v:.2e}"
    return str(v)


def _cell(text) -> str:
    return str(text).replace("|", "/").replace("\n", " ")


def render(sections: dict) -> str:
    lines = ["# Reliability (generated by benchmarks/reliability.py; do not edit by hand)", "",
             f"GPU: {environment()}. See the script's docstring for what each verdict means.", ""]
    meta = sections.get(META, {})
    elsewhere = {name: env for name, env in meta.items() if name in sections and env != environment()}
    if elsewhere:
        lines += ["Sections merged from another run (`--merge`), and where they ran: " +
                  "; ".join(f"{SECTION_TITLES.get(name, name)}: {env}" for name, env in elsewhere.items()) + ".", ""]
    if "numerics" in sections:
        lines += ["## (a) Numerics and input checks", "",
                  "Solution vs its reference and vs a float64 copy of the reference, forward and backward (output "
                  "and every gradient; the errors are the worst over them), at small shapes. "
                  "convt_gelu_groupnorm_tanh.py is compared with the tanh-GELU reference it computes "
                  "(kgen/specs/references/level2_19_convtranspose2d_gelu_tanh_groupnorm.py); "
                  "convt_gelu_groupnorm_fast.py (tolerance 1e-2) with the reference fed a channels-last input, "
                  "which runs the same cuDNN kernels: cuDNN's channels-last TF32 weight gradient is ~0.26 from "
                  "float64 at these shapes against ~3e-3 for its NCHW one, with or without kgen "
                  "(`python3 benchmarks/sanitize_fast_mode.py accuracy`).", "",
                  "| solution | case | verdict | tol | max err vs reference | vs float64 | reference vs float64 | message |",
                  "|---|---|---|---|---|---|---|---|"]
        for r in sections["numerics"]:
            lines.append(f"| {r['solution']} | {r['case']} | {r['verdict']} | {_fmt(r['tol'])} | {_fmt(r['err_ref'])} | "
                         f"{_fmt(r['err_fp64'])} | {_fmt(r['ref_err_fp64'])} | {_cell(r['message'])} |")
        lines.append("")
    if "families" in sections:
        lines += ["## (a2) Kernel families", "",
                  "One emitted file per kernel family at a small shape where the host code launches that family's "
                  "kernels (`python3 benchmarks/reliability_families.py table` says which condition each shape "
                  "meets): solution vs "
                  "reference and float64, output and every gradient, as in (a); then the family's kernels looked "
                  "up among those torch.profiler saw in one forward + backward and one no_grad forward (NOT "
                  "LAUNCHED, a failure, names the missing ones). Tolerance 1e-2 for --conv fast (the reference "
                  "fed channels-last input, as in (a)); for --conv fused (TF32, tol \"tf32\") each tensor within "
                  "1e-2 of float64 and each parameter gradient within 3e-2 of float64 times max(1, its largest "
                  "magnitude), as tests/gpu/test_convt_gelu_groupnorm.py holds it.", ""]
        from kgen.bench.families import markdown_table

        lines += markdown_table() + [""]
        lines += ["| family | input | case | verdict | tol | max err vs reference | vs float64 | reference vs float64 | message |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for r in sections["families"]:
            tol = "tf32" if r["source"] == "convt_fused" and r["tol"] is not None else _fmt(r["tol"])
            lines.append(f"| {r['family']} | {', '.join(str(s) for s in r['inputs'])} | {r['case']} | {r['verdict']} | "
                         f"{tol} | {_fmt(r['err_ref'])} | {_fmt(r['err_fp64'])} | {_fmt(r['ref_err_fp64'])} | "
                         f"{_cell(r['message'])} |")
        lines.append("")
    if "memory" in sections:
        lines += ["## (b) Memory and build-once", "", "| check | subject | verdict | detail |", "|---|---|---|---|"]
        for r in sections["memory"]:
            lines.append(f"| {r['check']} | {r['subject']} | {r['verdict']} | {_cell(r['detail'])} |")
        lines.append("")
    if "validator" in sections:
        lines += ["## (c) Validator on adversarial files", "",
                  "Exit codes: 0 pass, 1 a check failed, 2 broken, 3 runtime not run (no CUDA). Modes: static = "
                  "static checks only (the verdict without a GPU); runtime = the runner child with device cuda; "
                  "gpu = the whole `kgen validate`. Seconds include the child's start-up (and the run's timeout "
                  "for a hang).", "",
                  "| file | mode | defect | expected exit | observed | verdict | seconds | leftover process | detail |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for r in sections["validator"]:
            leftover = "" if r["leftover"] is None else ("yes" if r["leftover"] else "no")
            lines.append(f"| {r['file']} | {r['mode']} | {_cell(r['defect'])} | {r['expected']} | {_fmt(r['observed'])} | "
                         f"{r['verdict']} | {_fmt(r['seconds']) if r['seconds'] is None else r['seconds']} | {leftover} | "
                         f"{_cell(r['detail'])[:200]} |")
        lines.append("")
    if "sanitizer" in sections:
        lines += ["## (d) compute-sanitizer", "",
                  "benchmarks/sanitize.sh: each generated file at batch 2, spatial <= 16, forward + backward. Where a "
                  "tool reports errors, the kernels its reports name (ours = kgen kernels; library = cuDNN/cuBLAS/"
                  "PyTorch) or the CUDA API call.", "",
                  "| file | tool | exit | errors | verdict | seconds | reports name | log |", "|---|---|---|---|---|---|---|---|"]
        for r in sections["sanitizer"]:
            lines.append(f"| {r['file']} | {r['tool']} | {_fmt(r['exit'])} | {_fmt(r['errors'])} | {r['verdict']} | "
                         f"{_fmt(r['seconds']) if r['seconds'] is None else round(r['seconds'])} | {_cell(r['where'])} | {r['log']} |")
        if not sections["sanitizer"]:
            lines.append("| (no sanitize.sh results found: pass --sanitize-dir) | | | | | | | |")
        lines.append("")
    if "family_sanitizer" in sections:
        lines += ["## (d2) compute-sanitizer on the kernel families", "",
                  "benchmarks/sanitize.sh on each family of (a2) (target family:NAME: its emitted file at its shape, "
                  "benchmarks/sanitize.py: forward + backward, then a forward under no_grad), each tool a process. "
                  "Probes are evidence for the explained verdicts (family_reports_explained in "
                  "kgen/bench/reliability.py): initcheck-library-probe, the --conv fast family with every cuDNN output "
                  "copied by PyTorch before our kernels read it; bulk-store-probe, y in NaN-filled memory, every "
                  "value overwritten; initcheck-probe-pytorch, PyTorch's own sum over cuDNN's channels-last output.", "",
                  "| target | tool | exit | errors | verdict | seconds | reports name | log |", "|---|---|---|---|---|---|---|---|"]
        for r in sections["family_sanitizer"]:
            lines.append(f"| {r['file']} | {r['tool']} | {_fmt(r['exit'])} | {_fmt(r['errors'])} | {r['verdict']} | "
                         f"{_fmt(r['seconds']) if r['seconds'] is None else round(r['seconds'])} | {_cell(r['where'])} | {r['log']} |")
        lines.append("")
    return "\n".join(lines) + "\n"


def environment() -> str:
    gpu = torch.cuda.get_device_name() if torch.cuda.is_available() else "none (no CUDA device)"
    return f"{gpu}, PyTorch {torch.__version__}, CUDA {torch.version.cuda}"


FAILING = {"WRONG", "CRASH", "ACCEPTED", "FAIL", "MISMATCH", "REPORTED", "NOT RUN", "NOT LAUNCHED"}
SECTIONS = ("numerics", "families", "memory", "validator", "sanitizer", "family_sanitizer")   # rendered in this order
SECTION_TITLES = {"numerics": "(a)", "families": "(a2)", "memory": "(b)", "validator": "(c)", "sanitizer": "(d)",
                  "family_sanitizer": "(d2)"}
META = "_meta"   # JSON key: {section: the environment it ran in}


def failures(sections: dict) -> int:
    return sum(r["verdict"] in FAILING for name, rows in sections.items() if name != META for r in rows)


def numerics_rows(huge: bool) -> list[dict]:
    rows = []
    for file_name in GOLDEN:
        if out_of_time():
            rows.append(Row(file_name, "(all)", "NOT RUN", message="the time budget ran out first").__dict__)
            continue
        header = parse_header((GENERATED / file_name).read_text())
        spec = get_spec(header.spec)
        # the reference the variant computes exactly (--gelu tanh: the tanh-GELU reference)
        reference = load(spec.matching_reference_path(header.params), "reference_" + Path(file_name).stem)
        new_rows = run_solution(file_name, header.spec, header.params, reference)
        if header.spec == "groupnorm" and huge:
            new_rows.append(huge_groupnorm(load(GENERATED / file_name, "gn_huge"), reference))
        for r in new_rows:
            print(f"numerics {r.solution:36s} {r.case:60s} {r.verdict:9s} {_fmt(r.err_ref):9s} {r.message[:80]}",
                  flush=True)
        rows += [r.__dict__ for r in new_rows]
    return rows


_DEADLINE = math.inf


def set_budget(seconds: float | None) -> None:
    """Sections stop starting new files or families `seconds` from now (the rest: NOT RUN rows)."""
    global _DEADLINE
    _DEADLINE = math.inf if seconds is None else time.monotonic() + seconds


def out_of_time() -> bool:
    return time.monotonic() > _DEADLINE


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="RELIABILITY.md")
    parser.add_argument("--json")
    parser.add_argument("--sanitize-dir", type=Path, help="a benchmarks/sanitize.sh log directory")
    parser.add_argument("--sections", default="numerics,families,memory,validator,sanitizer,family_sanitizer")
    parser.add_argument("--families", help="comma-separated family names (default: every family)")
    parser.add_argument("--iterations", type=int, default=1000, help="memory check iterations (default 1000)")
    parser.add_argument("--no-huge", action="store_true", help="skip the > 2^31-element GroupNorm case")
    parser.add_argument("--budget", type=float, help="seconds: no new file or family is started after this long "
                                                     "(what was not reached is NOT RUN); the table is written as it grows")
    parser.add_argument("--merge", type=Path, help="start from the sections of an earlier --json output (e.g. add "
                                                   "the sanitizer section once sanitize.sh has finished)")
    args = parser.parse_args()
    set_budget(args.budget)
    wanted = [s.strip().replace("-", "_") for s in args.sections.split(",") if s.strip()]
    unknown = set(wanted) - set(SECTIONS)
    if unknown:
        parser.error(f"unknown sections {sorted(unknown)}")
    only = {n.strip() for n in args.families.split(",")} if args.families else None
    sections: dict = {}
    if args.merge is not None and args.merge.exists():
        merged = json.loads(args.merge.read_text())
        sections = {k: v for k, v in merged.items() if k not in wanted and k != META}
        sections[META] = {k: merged.get(META, {}).get(k, f"another run, merged from {args.merge}")
                          for k in sections}

    def write() -> None:
        ordered = {name: sections[name] for name in SECTIONS if name in sections}
        ordered[META] = sections.get(META, {})
        Path(args.out).write_text(render(ordered))
        if args.json:
            Path(args.json).write_text(json.dumps(ordered, indent=1, default=repr))

    def growing(name):
        return lambda rows: (sections.__setitem__(name, rows), write())

    producers = {"numerics": lambda: numerics_rows(not args.no_huge),
                 "families": lambda: family_rows(growing("families"), only),
                 "memory": lambda: memory_rows(args.iterations) + build_rows(),
                 "validator": lambda: validator_rows(growing("validator")),
                 "sanitizer": lambda: sanitizer_rows(args.sanitize_dir),
                 "family_sanitizer": lambda: family_sanitizer_rows(args.sanitize_dir)}
    sections.setdefault(META, {})
    for name in SECTIONS:
        if name in wanted:
            sections[META][name] = environment()
            sections[name] = producers[name]()
            write()   # after every section: a time limit leaves what was found
    bad = failures(sections)
    rows = sum(len(r) for name, r in sections.items() if name != META)
    print(f"reliability: {rows} rows, {bad} failing; wrote {args.out}", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
