"""Section (a): every golden file on valid and invalid inputs (kgen.bench.reliability's docstring)."""
from __future__ import annotations

import math
from pathlib import Path

import torch

from kgen.bench.reliability.common import (
    ATOL, Row, build, first_line, judge, judge_mode, load, max_err, out_of_time, settle, special_pattern, tolerance_for)
from kgen.bench.reliability.report import fmt
from kgen.golden import GENERATED, GOLDEN
from kgen.header import parse_header
from kgen.specs import get_spec


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
    yield "NaN in the input", init, lambda: with_poison(torch.rand(shape, device="cuda"), math.nan)
    yield "+Inf in the input", init, lambda: with_poison(torch.rand(shape, device="cuda"), math.inf)
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


def with_poison(x: torch.Tensor, value: float) -> torch.Tensor:
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
            print(f"numerics {r.solution:36s} {r.case:60s} {r.verdict:9s} {fmt(r.err_ref):9s} {r.message[:80]}",
                  flush=True)
        rows += [r.__dict__ for r in new_rows]
    return rows
