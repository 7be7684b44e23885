"""Section (a2): every kernel family of kgen.bench.families at its launching shape, judged and its kernels
seen launched."""
from __future__ import annotations

import math

import torch

from kgen.bench.reliability.common import (
    ATOL, TF32, build, first_line, forward_backward, judge, load, out_of_time, settle)
from kgen.bench.reliability.numerics import with_poison
from kgen.bench.reliability.report import fmt
from kgen.golden import GENERATED


def family_cases(shapes: tuple):
    """(case, maker of the inputs) for a family's input shapes; the first is the launch check's."""
    def poisoned():
        inputs = [torch.rand(s, device="cuda") for s in shapes]
        with_poison(inputs[0], math.nan)
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
            print(f"family {r['family']:18s} {r['verdict']:12s} {r['case'][:50]:50s} {fmt(r['err_ref']):9s} "
                  f"{r['message'][:100]}", flush=True)
        on_row(flat())
    return flat()
