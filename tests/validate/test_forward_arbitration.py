"""kgen's forward verdict arbitrated as its gradients are, and the degenerate-output guard, on the CPU.

reference_gn_tf32_conv feeds a GroupNorm region into a convolution that rounds its operands to TF32 in
float32 (as cuDNN does on a GPU), so a correct solution that rounds the region differently misses 1e-4 in a
few dozen places: kgen's verdict must PASS it (float64 and the reference's rounding noise say it is as
accurate), KernelBench's must FAIL it with the measured reason; a solution 1e-3 off inside the region must
FAIL both. reference_small_output's outputs are within 1e-2 of zero, so a file returning zeros passes every
comparison at 1e-2: only the guard can FAIL it."""
import torch

from kgen.validate.checks import EXIT_FAIL, EXIT_PASS, exit_code
from kgen.validate.runtime import run_child
from kgen.validate.stages.dependence import judge_dependence
from kgen.validate.verdicts import kernelbench_verdict
from tests.validate.helpers import RUNTIME_FILES

TF32_REFERENCE = RUNTIME_FILES / "reference_gn_tf32_conv.py.txt"
SMALL_REFERENCE = RUNTIME_FILES / "reference_small_output.py.txt"


def run(name, reference, **overrides):
    config = {"device": "cpu", "trials": 2, "atol": 1e-4, "rtol": 1e-4, "backward": True, "bench": False,
              "init_args": None, "input_shapes": None, "kernels": False,
              "solution": str(RUNTIME_FILES / f"{name}.py.txt"), "reference": str(reference), **overrides}
    result = run_child(config, 300)
    return result, kernelbench_verdict(result.checks, result.kernelbench, result.ran)


def forward_checks(result):
    return [c for c in result.checks if c.name.startswith("trial") and c.name.endswith(" forward")]


def test_a_correct_region_before_a_tf32_convolution_passes_kgen_and_fails_kernelbench_with_its_reason():
    result, kb = run("gn_tf32_conv_reordered", TF32_REFERENCE)
    failed = [c.name for c in result.checks if c.ok is False]
    assert exit_code(result.checks, result.ran) == EXIT_PASS, failed
    forwards = forward_checks(result)
    disputed = [c for c in forwards if "arbiter" in c.data]
    assert disputed, "the solution never missed the reference: the arbitration was not exercised"
    assert all(c.ok and c.data["outside"] > 0 for c in disputed)
    assert kb["verdict"] == "FAIL"
    assert "no re-implementation that rounds differently meets this tolerance" in kb["summary"]
    assert "the solution is within that noise" in kb["summary"]


def test_a_region_1e3_off_before_the_convolution_fails_both_verdicts():
    result, kb = run("gn_tf32_conv_offset", TF32_REFERENCE)
    assert exit_code(result.checks, result.ran) == EXIT_FAIL
    forwards = forward_checks(result)
    assert forwards and all(c.ok is False and "arbiter" in c.data for c in forwards)
    assert kb["verdict"] == "FAIL" and "the solution is beyond that noise" in kb["summary"]


def test_zeros_within_a_loose_tolerance_fail_the_guard_alone():
    result, _ = run("zeros", SMALL_REFERENCE, atol=1e-2, rtol=1e-2, backward=False)
    failed = [c.name for c in result.checks if c.ok is False]
    assert failed == ["output follows its input"], failed
    assert exit_code(result.checks, result.ran) == EXIT_FAIL


def test_a_correct_file_with_small_outputs_passes_the_guard():
    result, _ = run("small_output_ok", SMALL_REFERENCE, atol=1e-2, rtol=1e-2, backward=False)
    guard = next(c for c in result.checks if c.name == "output follows its input")
    assert guard.ok is True and guard.data["miss"] < 1e-3
    assert exit_code(result.checks, result.ran) == EXIT_PASS


def samples(seed=0, n=4096):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(n, generator=g, dtype=torch.float64), torch.randn(n, generator=g, dtype=torch.float64))


def test_the_guard_fails_constant_cached_and_unrelated_outputs():
    ref_a, ref_b = samples()
    cached = ref_a.clone()
    assert judge_dependence("g", ref_a, ref_b, cached, cached).ok is False              # the first result, kept
    assert judge_dependence("g", ref_a, ref_b, ref_a * 0, ref_b * 0).ok is False        # zeros
    other_a, other_b = samples(seed=1)
    assert judge_dependence("g", ref_a, ref_b, other_a, other_b).ok is False            # follows something else


def test_the_guard_passes_rounding_and_notes_an_insensitive_reference():
    ref_a, ref_b = samples()
    noisy = judge_dependence("g", ref_a, ref_b, ref_a * (1 + 4e-3), ref_b * (1 - 4e-3))   # bfloat16-sized errors
    assert noisy.ok is True
    flat_a = 1.0 + 1e-6 * ref_a
    flat_b = 1.0 + 1e-6 * ref_b
    insensitive = judge_dependence("g", flat_a, flat_b, flat_a.clone(), flat_b.clone())
    assert insensitive.ok is None and insensitive.info


def test_the_guard_notes_a_reference_whose_change_is_its_rounding_noise():
    """L2-23's output (a GroupNorm's output averaged) is its bias's mean whatever the input: the reference moves
    between two inputs by rounding alone, and a correct solution's rounding differs by as much."""
    ref_a, ref_b = samples()
    bias = 0.0   # a bias mean near zero: the rounding is all of the output's size
    out_a, out_b = bias + 1e-7 * ref_a, bias + 1e-7 * ref_b
    new_a, new_b = bias + 1e-7 * ref_b, bias + 1e-7 * ref_a           # rounding of its own
    change = float((out_a - out_b).norm())
    judged = judge_dependence("g", out_a, out_b, new_a, new_b, noise=change)
    assert judged.ok is None and judged.info
    assert judge_dependence("g", out_a, out_b, new_a, new_b, noise=None).ok is False   # without the noise floor
    constant = judge_dependence("g", ref_a, ref_b, ref_a.clone(), ref_a.clone(), noise=1e-9 * change)
    assert constant.ok is False                                        # far above the noise: still degenerate
