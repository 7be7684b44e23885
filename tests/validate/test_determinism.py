"""The determinism check judges the solution's own kernels, not the libraries it shares
with the reference. The decision (a pure function of what was measured) is tested case by case; the whole
path runs on the CPU with a stand-in for a nondeterministic library call (noise unless
torch.use_deterministic_algorithms(True)); the GPU test (test_verdicts_gpu.py) uses index_add_'s atomics."""
import pytest
import torch

from kgen.validate.checks import EXIT_FAIL, EXIT_PASS, exit_code
from kgen.validate.runtime import run_child
from kgen.validate.stages.determinism import Round, judge_determinism, library_setting
from tests.validate.helpers import RUNTIME_FILES

SMALL = {"device": "cpu", "trials": 2, "atol": 1e-4, "rtol": 1e-4, "backward": True, "bench": False,
         "init_args": [8, 2], "input_shapes": [[3, 8, 5, 6]]}
NOISY_LIBRARY_REFERENCE = RUNTIME_FILES / "reference_library_nondeterministic.py.txt"

D, C, A = "default", "cudnn.deterministic", "deterministic algorithms"


# ---- the decision ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("rounds, ok, has_note, words", [
    # reproducible at once: PASS, nothing to say about the reference
    ([Round(D, True, True)], True, False, ["bitwise identical"]),
    # the solution is, the reference is not: PASS, the reference's behaviour as INFO
    ([Round(D, True, False, 0.0, 2e-7)], True, True, ["bitwise identical"]),
    # both vary by default, both reproducible with cudnn.deterministic (the L2-19 ConvTranspose2d case)
    ([Round(D, False, False, 9.5e-7, 9.5e-7), Round(C, True, True)], True, True,
     ["cudnn.deterministic=True", "not the solution's own kernels"]),
    # a library call only the solution makes, fixed by deterministic algorithms (index_add_): PASS + INFO
    ([Round(D, False, True, 1e-3, 0.0), Round(C, False, True, 1e-3, 0.0), Round(A, True, True)], True, True,
     ["use_deterministic_algorithms(True)"]),
    # its own atomics: never reproducible while the reference becomes so: FAIL
    ([Round(D, False, False, 1e-3, 1e-3), Round(C, False, False, 1e-3, 1e-3), Round(A, False, True, 1e-3, 0.0)],
     False, True, ["own kernels are nondeterministic"]),
    # its own noise against a deterministic reference: FAIL, nothing about the reference
    ([Round(D, False, True, 1e-7), Round(C, False, True, 1e-7), Round(A, False, True, 1e-7)], False, False,
     ["own kernels are nondeterministic"]),
    # neither ever reproducible: judged by the size of the run-to-run differences
    ([Round(D, False, False, 1e-6, 1e-6), Round(C, False, False, 1e-6, 1e-6), Round(A, False, False, 1.5e-6, 1e-6)],
     True, True, ["within 2x the reference's"]),
    ([Round(D, False, False, 1e-6, 1e-6), Round(C, False, False, 1e-6, 1e-6), Round(A, False, False, 5e-6, 1e-6)],
     False, True, ["more than 2x the reference's"]),
])
def test_judge_determinism(rounds, ok, has_note, words):
    decision = judge_determinism(rounds)
    assert decision.ok is ok, decision.detail
    assert (decision.reference_note is not None) is has_note, decision.reference_note
    for word in words:
        assert word in decision.detail, decision.detail
    checks = decision.checks("trial 1 (rand)", rounds)
    assert checks[0].name == "trial 1 (rand) deterministic" and checks[0].ok is ok
    assert checks[0].data["rounds"][0]["setting"] == "default"
    if has_note:
        assert checks[1].verdict == "INFO" and checks[1].name == "trial 1 (rand) reference determinism"
        assert checks[1].ok is None     # information: never changes the exit code


def test_reference_note_lists_each_round():
    rounds = [Round(D, False, False, 9.5e-7, 9.5e-7), Round(C, True, True)]
    text = judge_determinism(rounds).reference_note
    assert "not bitwise reproducible" in text
    assert "max|Δ| 9.5e-07" in text and "cudnn.deterministic=True: bitwise reproducible" in text


@pytest.mark.parametrize("setting", ["default", "cudnn.deterministic", "deterministic algorithms"])
def test_library_setting_applies_and_restores(setting):
    cudnn = torch.backends.cudnn
    before = (cudnn.deterministic, cudnn.benchmark, torch.are_deterministic_algorithms_enabled())
    with library_setting(setting):
        assert cudnn.deterministic is (True if setting != "default" else before[0])
        assert torch.are_deterministic_algorithms_enabled() is (True if setting == "deterministic algorithms"
                                                                else before[2])
    assert (cudnn.deterministic, cudnn.benchmark, torch.are_deterministic_algorithms_enabled()) == before


def test_library_setting_restores_after_an_exception():
    before = (torch.backends.cudnn.deterministic, torch.are_deterministic_algorithms_enabled())
    with pytest.raises(ZeroDivisionError):
        with library_setting("deterministic algorithms"):
            1 / 0
    assert (torch.backends.cudnn.deterministic, torch.are_deterministic_algorithms_enabled()) == before


# ---- the whole path, on the CPU -------------------------------------------------------------------------

def run(name, reference=NOISY_LIBRARY_REFERENCE, **overrides):
    config = {**SMALL, "solution": str(RUNTIME_FILES / f"{name}.py.txt"), "reference": str(reference), **overrides}
    return run_child(config, 120)


def named(result, ending):
    return [c for c in result.checks if c.name.endswith(ending)]


def test_solution_sharing_the_references_nondeterministic_library_call_passes_with_info():
    result = run("shares_library_nondeterminism")
    assert exit_code(result.checks, result.ran) == EXIT_PASS, [c.name for c in result.checks if c.ok is False]
    det = named(result, " deterministic")
    assert len(det) == 2 and all(c.ok for c in det)
    assert all("use_deterministic_algorithms(True)" in c.detail for c in det)
    assert [r["setting"] for r in det[0].data["rounds"]] == ["default", "cudnn.deterministic",
                                                             "deterministic algorithms"]
    info = named(result, " reference determinism")
    assert len(info) == 2 and all(c.verdict == "INFO" for c in info)
    assert "not bitwise reproducible" in info[0].detail


def test_own_nondeterminism_still_fails_against_a_nondeterministic_reference():
    result = run("nondeterministic")     # adds its own noise on every call, whatever the settings
    failed = [c.name for c in result.checks if c.ok is False]
    assert exit_code(result.checks, result.ran) == EXIT_FAIL
    assert failed == ["trial 1 (rand) deterministic", "trial 2 (3+2*randn) deterministic"]
    assert "own kernels are nondeterministic" in named(result, "trial 1 (rand) deterministic")[0].detail


def test_deterministic_solution_against_a_nondeterministic_reference_reports_the_reference():
    result = run("ok")
    assert exit_code(result.checks, result.ran) == EXIT_PASS
    det = named(result, "trial 1 (rand) deterministic")[0]
    assert det.ok and det.detail == "two calls, bitwise identical"
    assert len(det.data["rounds"]) == 1                       # no re-check needed
    assert named(result, "trial 1 (rand) reference determinism")[0].verdict == "INFO"


def test_deterministic_reference_adds_no_reference_note():
    from tests.validate.helpers import REFERENCE

    result = run("ok", reference=REFERENCE)
    assert not named(result, "reference determinism")
