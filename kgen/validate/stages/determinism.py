"""Determinism: does the solution give bitwise the same output twice on one input? -- judged on the
solution's own kernels, not on the libraries it shares with the reference.

Measured in rounds, each calling the reference twice and then the solution twice on the trial's input:

    default                   PyTorch's settings as they are
    cudnn.deterministic       torch.backends.cudnn.deterministic = True (benchmark off)
    deterministic algorithms  also torch.use_deterministic_algorithms(True, warn_only=True): index_add_,
                              scatter_add_, ... take their deterministic paths

The later rounds run only while the solution is not reproducible; every setting is restored afterwards.
`judge_determinism` (pure, unit-tested on the CPU) turns the rounds into the verdict:

  - reproducible by default                                        PASS
  - reproducible once a round makes the libraries deterministic    PASS (the run-to-run difference was the
                                                                   libraries', e.g. cuDNN's), with an INFO
  - never reproducible, the reference reproducible in the last round  FAIL (the solution's own kernels)
  - never reproducible, nor the reference in the last round        PASS only if the solution's run-to-run
                                                                   difference is at most 2x the reference's
                                                                   (+1 ulp-scale floor), else FAIL
An output of the second call that is the same memory as the first's (a reused buffer) always FAILs.
What the reference does is reported apart, as INFO, whenever it was not bitwise reproducible.
"""
from __future__ import annotations

import contextlib
import warnings
from dataclasses import asdict, dataclass

import torch

from kgen.validate.checks import Check, failed, note
from kgen.validate.context import Context, progress
from kgen.validate.numerics import bitwise_equal, compare, shares_memory

SETTINGS = ("default", "cudnn.deterministic", "deterministic algorithms")
SETTING_TEXT = {
    "default": "PyTorch's default settings",
    "cudnn.deterministic": "torch.backends.cudnn.deterministic=True",
    "deterministic algorithms": "torch.use_deterministic_algorithms(True) and cudnn.deterministic=True",
}
FLOOR = 1e-30   # a bound of 2 x 0 would fail a solution for any difference against a silent reference


@dataclass
class Round:
    """What two calls on one input showed under one setting (max|Δ| is 0 when bitwise identical)."""

    setting: str
    solution: bool
    reference: bool | None          # None: not measured
    solution_delta: float = 0.0
    reference_delta: float | None = None


@dataclass
class Decision:
    ok: bool
    detail: str
    reference_note: str | None       # the INFO about the reference, if there is something to say

    def checks(self, label: str, rounds: list[Round]) -> list[Check]:
        data = {"rounds": [asdict(r) for r in rounds]}
        main = Check(f"{label} deterministic", self.ok, self.detail, data)
        if self.reference_note is None:
            return [main]
        return [main, note(f"{label} reference determinism", self.reference_note, **data)]


def _delta(d: float | None) -> str:
    return "?" if d is None else f"{d:.3g}"


def _reference_story(rounds: list[Round]) -> str | None:
    """What the reference did, round by round, when it was not always reproducible (else None)."""
    measured = [r for r in rounds if r.reference is not None]
    if all(r.reference for r in measured):
        return None
    parts = [f"{SETTING_TEXT[r.setting]}: " + ("bitwise reproducible" if r.reference
                                               else f"two calls differ by max|Δ| {_delta(r.reference_delta)}")
             for r in measured]
    return "the reference's own library calls are not bitwise reproducible on this input (" + "; ".join(parts) + ")"


def judge_determinism(rounds: list[Round]) -> Decision:
    """The verdict from the rounds measured (the first is "default"); see the module's docstring."""
    first = rounds[0]
    story = _reference_story(rounds)
    if first.solution:
        return Decision(True, "two calls, bitwise identical",
                        story and story + "; the solution's output is bitwise reproducible")
    fixed = next((r for r in rounds[1:] if r.solution), None)
    if fixed is not None:
        detail = (f"bitwise identical with {SETTING_TEXT[fixed.setting]}; with {SETTING_TEXT['default']} two "
                  f"calls differ by max|Δ| {_delta(first.solution_delta)}, in library calls, not the "
                  f"solution's own kernels")
        if story is None:
            story = ("the reference was bitwise reproducible in every round: the nondeterministic library call "
                     "is one the solution makes and the reference does not")
        return Decision(True, detail, story)
    last = rounds[-1]
    if last.reference is None or last.reference:
        return Decision(False, f"output differs bitwise between two calls on the same input under every setting "
                               f"tried (max|Δ| {_delta(last.solution_delta)} with {SETTING_TEXT[last.setting]}), "
                               f"where the reference is reproducible: the solution's own kernels are "
                               f"nondeterministic", story)
    bound = 2 * (last.reference_delta or 0.0) + FLOOR
    ok = last.solution_delta <= bound
    detail = (f"neither the solution nor the reference is bitwise reproducible under any setting tried; the "
              f"solution's run-to-run max|Δ| {_delta(last.solution_delta)} is "
              + ("within" if ok else "more than") + f" 2x the reference's {_delta(last.reference_delta)}")
    return Decision(ok, detail, story)


@contextlib.contextmanager
def library_setting(setting: str):
    """Make PyTorch's libraries deterministic to the degree `setting` names; restore everything after."""
    cudnn = torch.backends.cudnn
    saved = (cudnn.deterministic, cudnn.benchmark, torch.are_deterministic_algorithms_enabled(),
             torch.is_deterministic_algorithms_warn_only_enabled())
    det_utils = getattr(torch.utils, "deterministic", None)
    saved_fill = getattr(det_utils, "fill_uninitialized_memory", None)
    try:
        if setting != "default":
            cudnn.deterministic, cudnn.benchmark = True, False
        if setting == "deterministic algorithms":
            torch.use_deterministic_algorithms(True, warn_only=True)
            if saved_fill is not None:
                det_utils.fill_uninitialized_memory = False   # change the algorithms only, not torch.empty
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        cudnn.deterministic, cudnn.benchmark = saved[0], saved[1]
        torch.use_deterministic_algorithms(saved[2], warn_only=saved[3])
        if saved_fill is not None:
            det_utils.fill_uninitialized_memory = saved_fill


def _same(first: list, again: list) -> tuple[bool, float]:
    """Whether two calls' outputs are bitwise equal, and their max|Δ| (0 when equal)."""
    same, delta = True, 0.0
    for a, b in zip(first, again):
        if not isinstance(a, torch.Tensor) or not isinstance(b, torch.Tensor):
            continue
        if a.shape != b.shape or a.dtype != b.dtype:
            return False, float("inf")
        if not bitwise_equal(a, b):
            same = False
            delta = max(delta, compare(b, a, 0.0, 0.0).max_abs)
    return same, delta


def _twice(ctx: Context, model, inputs: list) -> tuple[bool, float]:
    first = ctx.run(model, inputs)
    again = ctx.run(model, inputs)
    result = _same(first, again)
    del first, again
    ctx.free()
    return result


def reproducibility(ctx: Context, model, inputs: list, first: list) -> tuple[bool, float]:
    """Call `model` again on the input that gave `first`: (bitwise equal, max|Δ|)."""
    again = ctx.run(model, inputs)
    result = _same(first, again)
    del again
    ctx.free()
    return result


def check_determinism(ctx: Context, label: str, inputs: list, new_outs: list,
                      reference: tuple[bool, float]) -> list[Check]:
    """The trial's determinism checks, from the solution's first outputs on `inputs` and what calling the
    reference twice on them showed. Takes ownership of new_outs (emptied, so its memory can go)."""
    ref_same, ref_delta = reference
    again = ctx.run(ctx.new_model, inputs)
    for i, (a, b) in enumerate(zip(new_outs, again)):
        if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and shares_memory(a, b):
            return [failed(f"{label} deterministic", f"output[{i}] of the second call is the same memory as the "
                                                     f"first's (an output buffer reused across calls)")]
    new_same, new_delta = _same(new_outs, again)
    new_outs.clear()
    del again
    ctx.free()
    rounds = [Round("default", new_same, ref_same, new_delta, ref_delta)]
    for setting in SETTINGS[1:]:
        if rounds[-1].solution:
            break
        progress(f"{label}: two calls differ; again with {SETTING_TEXT[setting]}")
        with library_setting(setting):
            ref_same, ref_delta = _twice(ctx, ctx.ref_model, inputs)
            new_same, new_delta = _twice(ctx, ctx.new_model, inputs)
        rounds.append(Round(setting, new_same, ref_same, new_delta, ref_delta))
    return judge_determinism(rounds).checks(label, rounds)
