"""Two verdicts on one file, side by side:

  KernelBench  what KernelBench alone would conclude: its correctness protocol (forward only, atol=rtol=1e-4
               at fp32, 1e-2 at --precision fp16|bf16, at fp32 under --autocast, which KernelBench lacks; run
               by stages/kernelbench.py) and its static checker's strict rules (reproduced by
               kgen.validate.static). Information only: it never changes the exit code.
  kgen         kgen's exit code, with its failed checks grouped by what they are about (static rules,
               state_dict, forward, inputs, determinism, gradients, float64, kernels, broken).
"""
from __future__ import annotations

from kgen.validate.checks import EXIT_BROKEN, EXIT_FAIL, EXIT_NO_CUDA, EXIT_PASS, Check

# kgen's static checks that reproduce a strict rule of KernelBench's static checker (code_bypass,
# timing_event_patch, thread_injection, lazy_eval, cuda_impl); its stream rule is only a warning there
KERNELBENCH_STATIC = ("parses", "defines ModelNew", "no try/except", "no pass", "no timer monkey-patch",
                      "no threads/processes", "no tensor subclass", "calls load_inline", "has a __global__ kernel")
STATIC_NAMES = KERNELBENCH_STATIC + ("defines get_inputs, get_init_inputs", "imports: torch + stdlib only",
                                     "no extra CUDA streams", "ModelNew.__init__ signature")
AREAS = ("broken", "static", "state_dict", "forward", "inputs", "determinism", "gradients", "float64", "kernels")
SHOWN_PER_AREA = 2


def area_of(check: Check) -> str:
    name = check.name
    if check.broken:
        return "broken"
    if name in STATIC_NAMES:
        return "static"
    if name.startswith(("state_dict", "load_state_dict")):
        return "state_dict"
    if name.startswith("fp64"):
        return "float64"
    if name.startswith("kernels"):
        return "kernels"
    if name.endswith("deterministic"):
        return "determinism"
    if " grad " in name or name.endswith(" backward"):
        return "gradients"
    if name.endswith(("inputs untouched", "alias an input")):
        return "inputs"
    return "forward"


def kgen_verdict(checks: list[Check], exit_code: int | None) -> dict:
    word = {EXIT_PASS: "PASS", EXIT_FAIL: "FAIL", EXIT_BROKEN: "BROKEN", EXIT_NO_CUDA: "NOT RUN"}.get(exit_code)
    failed: dict[str, list[str]] = {}
    for check in checks:
        if check.ok is False:
            failed.setdefault(area_of(check), []).append(check.name)
    failed = {area: failed[area] for area in AREAS if area in failed}
    if failed:
        parts = []
        for area, names in failed.items():
            shown = ", ".join(n[len(area) + 2:] if n.startswith(area + ": ") else n for n in names[:SHOWN_PER_AREA])
            more = f" (+{len(names) - SHOWN_PER_AREA} more)" if len(names) > SHOWN_PER_AREA else ""
            parts.append(f"{area}: {shown}{more}")
        summary = "; ".join(parts)
    elif exit_code == EXIT_PASS:
        summary = "static rules, state_dict, forward, inputs, determinism, gradients, float64, kernels"
    elif exit_code == EXIT_NO_CUDA:
        summary = "static checks passed; runtime checks not run (no CUDA device)"
    else:
        summary = ""
    return {"verdict": word, "exit_code": exit_code, "failed": failed, "summary": summary}


def tolerance_text(tol: float) -> str:
    """1e-4 rather than 0.0001."""
    mantissa, exponent = f"{tol:.0e}".split("e")
    return f"{mantissa}e{int(exponent)}" if float(f"{tol:.0e}") == tol else f"{tol:g}"


def floor_text(floor: dict, tol: float, forward_cleared: bool = False) -> str:
    """Why KernelBench's check failed, from the measured floor (stages/kernelbench.py, reference_floor).
    `forward_cleared`: kgen's own forward checks passed, against float64 where disputed."""
    if "unavailable" in floor:
        return f"no floor measured (the reference fails under rounding jitter: {floor['unavailable']})"
    moved, out = floor["reference_jitter_max_abs"], floor["reference_jitter_outside"]
    jitter = floor.get("jitter") or f"±{floor.get('jitter_ulps', 4)}-ulp jitter of its arithmetic"
    if not out:
        stays = (f"measured floor: under {jitter} the reference stays within {tolerance_text(tol)} of itself "
                 f"(max|Δ| {moved:.3g})")
        if forward_cleared:   # e.g. a threshold the solution's float32 arithmetic crosses and the reference's
            # half-precision rounding does not, which no jitter of the reference's own arithmetic reaches
            return (stays + ", which does not reach this mismatch; kgen's forward checks clear the solution "
                    "against float64 (a threshold or tie its rounding decides the other way)")
        return stays + ", so the mismatch is the solution's"
    return (f"measured floor: under {jitter} the reference itself moves by up to {moved:.3g}, {out} values beyond "
            f"{tolerance_text(tol)}, so no re-implementation that rounds differently meets this tolerance here; "
            + ("the solution is within that noise" if floor["solution_within_noise"] else
               "the solution is beyond that noise"))


def precision_words(kernelbench: dict) -> str:
    """KernelBench's --precision where it is not its default fp32, and why it is fp32 under --autocast."""
    precision = kernelbench.get("precision", "fp32")
    layout = f"{kernelbench['layout_note']}, " if kernelbench.get("layout_note") else ""
    if kernelbench.get("note"):
        return f"{precision} ({kernelbench['note']}), " + layout
    return ("" if precision == "fp32" else f"--precision {precision}, ") + layout


def kernelbench_verdict(checks: list[Check], kernelbench: dict | None, runtime_ran: bool) -> dict:
    static = [c.name for c in checks if c.name in KERNELBENCH_STATIC and c.ok is False]
    broken = next((c for c in checks if c.ok is False and c.broken), None)
    correct = None
    if kernelbench is not None and kernelbench.get("reference_fails"):
        what = f"not applicable: the reference itself fails under KernelBench's protocol: {kernelbench['reference_fails']}"
    elif kernelbench is not None:
        trials = kernelbench.get("trials", [])
        n = kernelbench.get("num_correct_trials", len(trials))
        good = sum(1 for t in trials if t.get("ok"))
        correct = bool(kernelbench.get("correct"))
        what = (f"forward only, {precision_words(kernelbench)}atol=rtol="
                f"{tolerance_text(kernelbench.get('tolerance', 1e-4))}: {good} of {n} "
                f"trials correct on the {kernelbench.get('inputs', 'inputs')}")
        if not correct:
            problem = next((t.get("problem") for t in trials if not t.get("ok")), None) or "incomplete"
            what += f"; first failure: {problem}"
            floor = next((t["floor"] for t in trials if "floor" in t), None)
            if floor is not None:
                cleared = any(area_of(c) == "forward" and c.ok for c in checks) and \
                    not any(area_of(c) == "forward" and c.ok is False for c in checks)
                what += "; " + floor_text(floor, kernelbench.get("tolerance", 1e-4), cleared)
    elif broken is not None and broken.name not in ("reference", "read solution"):
        correct = False
        first = broken.detail.strip().splitlines()[0][:120] if broken.detail.strip() else ""
        what = f"would not compile or run: {broken.name}: {first}"
    elif not runtime_ran:
        what = "correctness not run (no CUDA device)"
    else:
        what = "correctness not run"
    if static:
        what += "; its static checker rejects the file: " + ", ".join(static)
    if static or correct is False:
        word = "FAIL"
    elif correct:
        word = "PASS"
    else:
        word = "NOT RUN"
    return {"verdict": word, "correct": correct, "static_violations": static, "summary": what}
