"""Reliability table for issue 5: every adversarial case x every emitted solution, on a GPU.

    PYTHONPATH=. python3 benchmarks/reliability.py [--out benchmarks/RELIABILITY.md] [--json out.json]

For each golden file in generated/ and each case below, runs the solution and its reference (and a
float64 copy of the reference) on the same input and records a verdict:
  PASS         results agree with the reference (NaN where it has NaN) within 1e-4, or are closer to
               float64 than the reference is
  RAISES-OK    the case is invalid input and the solution raised a clear error (message recorded)
  WRONG        the solution returned a different answer (the cell that must never appear)
  CRASH        the solution raised on valid input (message recorded)
Small shapes keep the whole table to a few minutes; the >2^31-element case runs for GroupNorm only.
Status: written without a GPU at hand (the session's device time was spent); run it on the device and
commit its output, fixing whatever it shows.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path

import torch

from kgen.golden import GENERATED, GOLDEN
from kgen.header import parse_header
from kgen.specs import get_spec

ATOL = RTOL = 1e-4


@dataclass
class Row:
    solution: str
    case: str
    verdict: str
    err_ref: float | None = None
    err_fp64: float | None = None
    ref_err_fp64: float | None = None
    message: str = ""


def load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def build(cls, init, seed=0):
    torch.manual_seed(seed)
    return cls(*init).cuda()


def max_err(a: torch.Tensor, b: torch.Tensor) -> float:
    both_nan = a.isnan() & b.isnan()
    d = (a.double() - b.double()).abs().masked_fill(both_nan, 0)
    return float(d.max()) if d.numel() else 0.0


def judge(new_model, ref_model, x: torch.Tensor) -> tuple[str, float, float, float]:
    """Forward and backward of both models (and a float64 reference) on x."""
    outs, grads = [], []
    for model, dtype in ((new_model, torch.float32), (ref_model, torch.float32)):
        xi = x.detach().clone().to(dtype).requires_grad_()
        y = model(xi)
        torch.manual_seed(1)
        g = torch.randn_like(y)
        y.backward(g)
        outs.append(y.detach())
        grads.append(xi.grad)
        model.zero_grad(set_to_none=True)
    x64 = x.detach().double().requires_grad_()
    model64 = _double_copy(ref_model)
    y64 = model64(x64)
    torch.manual_seed(1)
    y64.backward(torch.randn_like(y64, dtype=torch.float32).double())
    new_y, ref_y = outs
    nan_ok = torch.equal(new_y.isnan(), ref_y.isnan()) and torch.equal(new_y.isinf(), ref_y.isinf())
    finite = ~(ref_y.isnan() | ref_y.isinf())
    err_ref = max_err(new_y[finite], ref_y[finite])
    err_fp64 = max(max_err(new_y[finite], y64.detach()[finite]), max_err(grads[0], x64.grad))
    ref_err_fp64 = max(max_err(ref_y[finite], y64.detach()[finite]), max_err(grads[1], x64.grad))
    close = torch.allclose(new_y[finite], ref_y[finite], atol=ATOL, rtol=RTOL) and torch.allclose(
        grads[0], grads[1], atol=ATOL, rtol=RTOL, equal_nan=True)
    better = err_fp64 <= 2 * ref_err_fp64 + ATOL
    verdict = "PASS" if nan_ok and (close or better) else "WRONG"
    return verdict, err_ref, err_fp64, ref_err_fp64


def _double_copy(model):
    import copy

    return copy.deepcopy(model).double()


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
    module = load(GENERATED / file_name, "solution_" + Path(file_name).stem)
    for case, init, make, *tweak in valid_cases(spec_name, params):
        tweak = tweak[0] if tweak else no_tweak
        new, ref = tweak(build(module.ModelNew, init)), tweak(build(reference.Model, init))
        x = make()
        try:
            verdict, e_ref, e_64, r_64 = judge(new, ref, x)
            rows.append(Row(file_name, case, verdict, e_ref, e_64, r_64))
        except Exception as error:  # the table records it; this harness is not a solution file
            rows.append(Row(file_name, case, "CRASH", message=str(error).splitlines()[0][:160]))
        del new, ref, x
        torch.cuda.empty_cache()
    init, shape = small_problem(spec_name, params)
    new = build(module.ModelNew, init)
    for case, make in invalid_cases(shape):
        try:
            new(make())
            rows.append(Row(file_name, case, "ACCEPTED", message="no error raised: check the result by hand"))
        except Exception as error:
            rows.append(Row(file_name, case, "RAISES-OK", message=str(error).splitlines()[0][:160]))
    if torch.cuda.device_count() > 1:
        with torch.cuda.device(1):
            other = build(module.ModelNew, init).to("cuda:1")
            ref1 = build(reference.Model, init).to("cuda:1")
            x1 = torch.rand(shape, device="cuda:1")
            ok = torch.allclose(other(x1), ref1(x1), atol=ATOL, rtol=RTOL)
            rows.append(Row(file_name, "model and input on a second GPU", "PASS" if ok else "WRONG"))
    else:
        rows.append(Row(file_name, "model and input on a second GPU", "SKIP", message="one GPU"))
    return rows


def huge_groupnorm(module, reference) -> Row:
    """More than 2^31 elements (64-bit indexing): 4 x 64 x 2900 x 2900 = 2.15e9."""
    shape = (4, 64, 2900, 2900)
    new, ref = build(module.ModelNew, [64, 8]), build(reference.Model, [64, 8])
    with torch.no_grad():
        x = torch.rand(shape, device="cuda")
        y = new(x)
        err = max_err(y[-1], ref(x[-1:])[0])   # the last sample lies beyond element 2^31
    return Row("groupnorm.py", "> 2^31 elements (forward, last sample)", "PASS" if err < 1e-4 else "WRONG", err)


def render(rows: list[Row]) -> str:
    lines = ["# Reliability (generated by benchmarks/reliability.py; do not edit by hand)", "",
             f"GPU: {torch.cuda.get_device_name()}, PyTorch {torch.__version__}. Tolerance {ATOL:g}.", "",
             "| solution | case | verdict | max err vs reference | vs float64 | reference vs float64 | message |",
             "|---|---|---|---|---|---|---|"]
    fmt = lambda v: "" if v is None else f"{v:.2e}"
    for r in rows:
        lines.append(f"| {r.solution} | {r.case} | {r.verdict} | {fmt(r.err_ref)} | {fmt(r.err_fp64)} | "
                     f"{fmt(r.ref_err_fp64)} | {r.message.replace('|', '/')} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default="benchmarks/RELIABILITY.md")
    parser.add_argument("--json")
    args = parser.parse_args()
    rows = []
    for file_name in GOLDEN:
        header = parse_header((GENERATED / file_name).read_text())
        spec = get_spec(header.spec)
        reference = load(spec.reference_path(header.params), "reference_" + Path(file_name).stem)
        rows += run_solution(file_name, header.spec, header.params, reference)
        if header.spec == "groupnorm":
            rows.append(huge_groupnorm(load(GENERATED / file_name, "gn_huge"), reference))
        print(render(rows[-3:]), flush=True)
    Path(args.out).write_text(render(rows))
    if args.json:
        Path(args.json).write_text(json.dumps([r.__dict__ for r in rows], indent=2))
    return 1 if any(r.verdict in ("WRONG", "CRASH") for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
