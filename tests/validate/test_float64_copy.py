"""The float64 copy of the reference (kgen/validate/float64.py): a reference that casts inside its forward
(`x.float()`, GroupNorm32's `.type(x.dtype)`, a `.float()` at its end) is run with every step in float64, so the
float64 checks neither crash on it nor round their truth to float32; and a reference that itself raises at the
run's dtype ends the run saying so, rather than calling the solution broken."""
import pytest
import torch

from kgen.validate.checks import EXIT_FAIL, EXIT_PASS, exit_code
from kgen.validate.float64 import KeepFloat64
from kgen.validate.runtime import run_child
from tests.validate.helpers import REFERENCE, RUNTIME_FILES

SMALL = {"device": "cpu", "trials": 2, "backward": True, "bench": False, "init_args": None, "input_shapes": None}


def run(solution, reference, **overrides):
    config = {**SMALL, "solution": str(RUNTIME_FILES / f"{solution}.py.txt"),
              "reference": str(RUNTIME_FILES / f"{reference}.py.txt"), **overrides}
    return run_child(config, 240)


def failed(result) -> list[str]:
    return [c.name for c in result.checks if c.ok is False]


def broken(result) -> list:
    return [c for c in result.checks if c.ok is False and c.broken]


def fp64_checks(result) -> list:
    return [c for c in result.checks if c.name.startswith("fp64") and c.ok is not None]


# ---- the mode ------------------------------------------------------------------------------------------------

# (the cast, what it gives where it asks for float64)
NARROWING = {
    ".float()": (lambda x, h: x.float(), lambda x: x),
    ".half()": (lambda x, h: x.half(), lambda x: x),
    ".bfloat16()": (lambda x, h: x.bfloat16(), lambda x: x),
    ".to(float32)": (lambda x, h: x.to(torch.float32), lambda x: x),
    ".to(dtype=bfloat16)": (lambda x, h: x.to(dtype=torch.bfloat16), lambda x: x),
    ".to(device, float16)": (lambda x, h: x.to("cpu", torch.float16), lambda x: x),
    ".to(other)": (lambda x, h: x.to(h), lambda x: x),
    ".type(float32)": (lambda x, h: x.type(torch.float32), lambda x: x),
    ".type('torch.FloatTensor')": (lambda x, h: x.type("torch.FloatTensor"), lambda x: x),
    ".type_as(other)": (lambda x, h: x.type_as(h), lambda x: x),
    "full(dtype=float32)": (lambda x, h: torch.full((3,), 0.1, dtype=torch.float32),
                            lambda x: torch.full((3,), 0.1, dtype=torch.float64)),
    ".sum(dtype=float32)": (lambda x, h: x.sum(dtype=torch.float32), lambda x: x.sum()),
}


@pytest.mark.parametrize("name", NARROWING)
def test_a_narrowing_cast_keeps_float64_values(name):
    cast, as_float64 = NARROWING[name]
    x = torch.randn(3, dtype=torch.float64) * (1 + 2 ** -30)   # values no float32 holds
    h = torch.randn(3).half()
    assert cast(x, h).dtype != torch.float64   # the cast narrows outside the mode
    with KeepFloat64():
        kept = cast(x, h)
    assert kept.dtype == torch.float64 and torch.equal(kept, as_float64(x))


def test_casts_to_other_types_and_views_are_untouched():
    x = torch.randn(4, dtype=torch.float64)
    with KeepFloat64():
        assert x.to(torch.int64).dtype == torch.int64
        assert (x > 0).float().dtype == torch.float64   # a mask made floating takes the wide type
        assert x.view(torch.int64).dtype == torch.int64
        assert x.type(torch.float64) is x or x.type(torch.float64).dtype == torch.float64


def test_gradients_flow_through_a_kept_cast():
    x = torch.randn(5, dtype=torch.float64, requires_grad=True)
    with KeepFloat64():
        (x.float() * 3).sum().backward()
    assert x.grad.dtype == torch.float64 and torch.equal(x.grad, torch.full_like(x, 3.0))


# ---- whole runs (the child process, on the CPU) --------------------------------------------------------------

def test_groupnorm32_reference_is_held_to_float64():
    """GroupNorm32's x.float() in a plain float64 copy raised (BROKEN at the fp64 stage); now the float64 checks
    run, and a planted eps bug fails them."""
    result = run("gn32_ok", "reference_gn32")
    assert not broken(result), broken(result)
    assert exit_code(result.checks, result.ran) == EXIT_PASS, failed(result)
    assert fp64_checks(result) and all(c.ok for c in fp64_checks(result))
    wrong = run("gn32_wrong_eps", "reference_gn32", trials=1)
    assert exit_code(wrong.checks, wrong.ran) == EXIT_FAIL
    assert any(c.name.startswith("fp64") for c in wrong.checks if c.ok is False), failed(wrong)


@pytest.mark.parametrize("overrides", [{}, {"precision": "bf16"}, {"precision": "bf16", "atol": 1e-4, "rtol": 1e-4}],
                         ids=["fp32", "bf16", "bf16-tight"])
def test_reference_with_a_float_cast_at_its_end(overrides):
    """A `.float()` at the reference's end: the float64 copy returned float32, and the arbiter, comparing it with
    the reference's output, raised ("Float did not match Double"); at atol = rtol = 1e-4 every bfloat16 rounding
    difference goes to it."""
    result = run("gn_float_at_end_ok", "reference_gn_float_at_end", **overrides)
    assert not broken(result), broken(result)
    assert exit_code(result.checks, result.ran) == EXIT_PASS, failed(result)
    assert fp64_checks(result) and all(c.ok for c in fp64_checks(result))


def test_a_reference_that_raises_at_the_runs_dtype_ends_the_run_saying_so():
    result = run("gn32_ok", "reference_gn32", precision="bf16")
    [check] = broken(result)
    assert check.name == "reference", check
    assert check.detail.startswith("the reference itself fails at --precision bf16 (RuntimeError: ")
    assert "nothing to compare the solution with [stage 'trial 1 (rand) forward']" in check.detail


def test_a_solution_whose_shape_guard_refuses_a_slice_of_the_batch_is_not_broken():
    """The float64 cross-check runs on a slice of the batch; an emitted file that holds to the batch size (a shape
    guard where the reference's Python read it) refuses the slice: skipped with its words, not BROKEN."""
    config = {**SMALL, "solution": str(RUNTIME_FILES / "batch_guarded.py.txt"), "reference": str(REFERENCE),
              "init_args": [8, 2], "input_shapes": [[3, 8, 5, 6]]}
    result = run_child(config, 240)
    assert not broken(result), broken(result)
    assert exit_code(result.checks, result.ran) == EXIT_PASS, failed(result)
    check = next(c for c in result.checks if c.name.startswith("fp64") and c.ok is None)
    assert check.detail.startswith("the solution refuses a slice of the batch: kgen: the reference read the value 3")
