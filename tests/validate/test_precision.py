"""`kgen validate --precision fp16|bf16` and `--autocast fp16|bf16`, on the CPU: the noise model that scales the
float32 rules by the dtype's rounding, the run's dtypes reaching every model call, and whole runs of the child
(kgen.validate.runner) on small pure-PyTorch solutions -- correct ones that must pass at the dtype, and planted
bugs that must fail there. On a GPU the same code runs with device "cuda" and torch.autocast("cuda", ...)."""
import contextlib

import pytest
import torch

from kgen.validate.checks import EXIT_FAIL, EXIT_PASS, exit_code
from kgen.validate.context import Context, make_inputs, InputSpec, run_dtypes, StageError
from kgen.validate.numerics import compare, rounding_excess, unit_roundoff
from kgen.validate.runtime import run_child
from kgen.validate.stages.arbiter import Distance, separable_tolerance, within_bound
from kgen.validate.stages.dependence import noise_factor
from kgen.validate.stages.sensitivity import RoundingJitter, jitter_amplitude
from tests.validate.helpers import REFERENCE, RUNTIME_FILES

HALF = [torch.float16, torch.bfloat16]
NAMES = {torch.float16: "fp16", torch.bfloat16: "bf16"}


# ---- the noise model ---------------------------------------------------------------------------------------

def test_unit_roundoff_is_the_dtypes():
    assert unit_roundoff(torch.float32) == 2.0 ** -24
    assert unit_roundoff(torch.float16) == 2.0 ** -11
    assert unit_roundoff(torch.bfloat16) == 2.0 ** -8
    assert rounding_excess(torch.float32) == 0.0 and rounding_excess(torch.float64) == 0.0
    assert rounding_excess(torch.bfloat16) == 2.0 ** -8 - 2.0 ** -24
    assert rounding_excess(torch.float16) == 2.0 ** -11 - 2.0 ** -24


def test_float32_constants_are_unchanged():
    """Every float32-calibrated constant comes out of the noise model exactly as it was."""
    assert jitter_amplitude(torch.float32) == 4 * torch.finfo(torch.float32).eps
    assert jitter_amplitude(torch.float64) == 4 * torch.finfo(torch.float64).eps
    assert separable_tolerance(torch.float32) == 1e-2
    assert noise_factor(torch.float32) == 100


@pytest.mark.parametrize("dtype", HALF)
def test_half_precision_noise_grows_with_the_dtypes_rounding(dtype):
    eps = torch.finfo(dtype).eps
    assert jitter_amplitude(dtype) == pytest.approx(eps, rel=1e-3)   # one ulp of the dtype per operation
    assert separable_tolerance(dtype) == pytest.approx(1e-2 + 16 * unit_roundoff(dtype), rel=1e-4)
    assert noise_factor(dtype) == 10
    assert jitter_amplitude(torch.bfloat16) > jitter_amplitude(torch.float16) > jitter_amplitude(torch.float32)


def test_float64_bound_allows_one_ulp_of_the_run_dtype():
    """A solution one bfloat16 ulp of the largest value from float64, where the reference happens to be exact:
    within rounding at a bfloat16 run, beyond the bound of a float32 one."""
    new = Distance(max_abs=2 * 2.0 ** -8 * 8.0, allclose=False, magnitude=8.0)
    ref = Distance(max_abs=0.0, magnitude=8.0)
    ok32, bound32 = within_bound(new, ref, atol=1e-4)
    ok16, bound16 = within_bound(new, ref, atol=1e-4, dtype=torch.bfloat16)
    assert bound32 == 1e-4 and not ok32
    assert ok16 and bound16 == pytest.approx(1e-4 + 2 * rounding_excess(torch.bfloat16) * 8.0)
    assert not within_bound(Distance(max_abs=1.5 * bound16, allclose=False), ref, 1e-4, torch.bfloat16)[0]


def test_half_precision_tensors_are_compared_in_float32():
    """|256 - 1.0078125| is 254.9921875, which bfloat16 would round to 255."""
    new = torch.tensor([256.0], dtype=torch.bfloat16)
    ref = torch.tensor([1.0078125], dtype=torch.bfloat16)
    assert compare(new, ref, 0.0, 0.0).max_abs == 254.9921875


@pytest.mark.parametrize("dtype", HALF)
def test_jitter_moves_a_half_result_by_about_one_ulp(dtype):
    x = torch.full((4096,), 1.5, dtype=dtype)
    with RoundingJitter(seed=3) as mode:
        y = x * 1.0
    assert mode.jittered == 1
    moved = ((y.float() - 1.5).abs() / 1.5).max().item()
    assert 0 < moved <= 1.01 * torch.finfo(dtype).eps


# ---- the run's dtypes ----------------------------------------------------------------------------------------

def test_run_dtypes():
    assert run_dtypes({}) == (None, None)
    assert run_dtypes({"precision": "fp32"}) == (None, None)
    assert run_dtypes({"precision": "bf16"}) == (torch.bfloat16, None)
    assert run_dtypes({"autocast": "fp16"}) == (None, torch.float16)
    with pytest.raises(StageError, match="together"):
        run_dtypes({"precision": "fp16", "autocast": "bf16"})


@pytest.mark.parametrize("dtype", HALF)
def test_inputs_are_the_float32_draws_moved_to_the_dtype(dtype):
    specs = [InputSpec((3, 4), torch.float32), InputSpec((3,), torch.int64), InputSpec(None, value=2.5)]
    index = torch.tensor([0, 2, 1])
    plain = make_inputs(specs, "3+2*randn", 5, torch.device("cpu"), materialize=lambda: [None, index, 2.5])
    moved = make_inputs(specs, "3+2*randn", 5, torch.device("cpu"), materialize=lambda: [None, index, 2.5],
                        cast=dtype)
    assert moved[0].dtype == dtype and torch.equal(moved[0], plain[0].to(dtype))
    assert moved[1].dtype == torch.int64 and torch.equal(moved[1], index)   # only floating inputs move
    assert moved[2] == 2.5


def context(cast=None, autocast=None) -> Context:
    return Context(config={}, results=None, device=torch.device("cpu"), atol=1e-2, rtol=1e-2, seed=42, cast=cast,
                   autocast=autocast)


def test_models_are_constructed_then_moved_to_the_precision():
    ctx = context(cast=torch.bfloat16)
    model = ctx.construct(torch.nn.Linear, init=[4, 3])
    torch.manual_seed(42)
    float32 = torch.nn.Linear(4, 3)
    assert model.weight.dtype == torch.bfloat16 and torch.equal(model.weight, float32.weight.to(torch.bfloat16))
    assert ctx.arithmetic == torch.bfloat16
    assert context().construct(torch.nn.Linear, init=[4, 3]).weight.dtype == torch.float32


@pytest.mark.parametrize("dtype", HALF)
def test_every_forward_autocasts_and_the_float64_truth_does_not(dtype):
    ctx = context(autocast=dtype)
    linear = torch.nn.Linear(4, 3)
    x = torch.rand(2, 4)
    assert ctx.run(linear, [x])[0].dtype == dtype
    assert ctx.run(linear, [x], autocast=False)[0].dtype == torch.float32
    assert ctx.run(linear.double(), [x.double()], autocast=False)[0].dtype == torch.float64
    assert ctx.arithmetic == dtype
    assert isinstance(context().autocasting(), contextlib.nullcontext)


# ---- whole runs (the child process, on the CPU) ------------------------------------------------------------

SMALL = {"device": "cpu", "trials": 2, "backward": True, "bench": False, "init_args": [8, 2],
         "input_shapes": [[3, 8, 5, 6]]}
CONV_REFERENCE = RUNTIME_FILES / "reference_conv_groupnorm.py.txt"


def run(name, timeout=240, **overrides):
    config = {**SMALL, "solution": str(RUNTIME_FILES / f"{name}.py.txt"), "reference": str(REFERENCE), **overrides}
    return run_child(config, timeout)


def failed(result) -> list[str]:
    return [c.name for c in result.checks if c.ok is False]


def check(result, name):
    return next(c for c in result.checks if c.name == name)


@pytest.mark.parametrize("precision", ["fp16", "bf16"])
@pytest.mark.parametrize("name", ["same_as_reference", "ok"])
def test_correct_solution_passes_at_half_precision(name, precision):
    """The reference's own module, and GroupNorm in plain PyTorch ops (rounding to the dtype after every op, so
    further from the reference than the tolerance in places: the float64 arbiter clears it)."""
    result = run(name, precision=precision)
    assert exit_code(result.checks, result.ran) == EXIT_PASS, failed(result)
    assert result.info["precision"] == precision and result.info["autocast"] is None
    dtype = {"fp16": "float16", "bf16": "bfloat16"}[precision]
    assert check(result, "trial 1 (rand) output shape/dtype/device").detail == f"(3, 8, 5, 6) {dtype} cpu"
    assert check(result, "trial 1 (rand) forward").data["atol"] == 1e-2   # KernelBench's tolerance for the dtype
    assert "ulp" in check(result, "fp64 (2 of 3 samples) forward").detail
    kb = result.kernelbench
    assert kb["correct"] is True and kb["precision"] == precision and kb["tolerance"] == 1e-2
    assert f"at {precision}" in kb["protocol"]


def test_float64_arbiter_allows_the_solutions_own_rounding_at_a_tight_tolerance():
    """At bfloat16 with --atol/--rtol 1e-4, nothing a bfloat16 result can meet, every disputed value goes to the
    float64 arbiter. The plain-op GroupNorm's input gradient (rounded to bfloat16 after every op) is 0.099 from
    float64 where the reference's is 0.044: over twice the reference's error plus atol (0.088), within it plus one
    bfloat16 ulp of its largest value (0.19), as the noise model allows. The reference's own module passes too."""
    result = run("ok", precision="bf16", atol=1e-4, rtol=1e-4)
    assert exit_code(result.checks, result.ran) == EXIT_PASS, failed(result)
    grad = check(result, "trial 1 (rand) grad input[0]")
    assert "bound 2×ref+atol+1 bfloat16 ulp" in grad.detail and grad.detail.endswith("-> as accurate as the reference")
    arbiter = grad.data["arbiter"]
    assert 2 * arbiter["reference_vs_fp64_max_abs"] + 1e-4 < arbiter["solution_vs_fp64_max_abs"] <= arbiter["bound"]
    same = run("same_as_reference", precision="bf16", atol=1e-4, rtol=1e-4, trials=1)
    assert exit_code(same.checks, same.ran) == EXIT_PASS, failed(same)


@pytest.mark.parametrize("precision", ["fp16", "bf16"])
def test_wrong_eps_fails_at_half_precision(precision):
    result = run("wrong_eps", precision=precision)
    names = failed(result)
    assert exit_code(result.checks, result.ran) == EXIT_FAIL
    assert "trial 1 (rand) forward" in names and "fp64 (2 of 3 samples) forward" in names
    assert "less accurate than the reference" in check(result, "trial 1 (rand) forward").detail
    assert not any(n.startswith(("state_dict", "load_state_dict")) or "deterministic" in n for n in names)
    assert result.kernelbench["correct"] is False and result.kernelbench["precision"] == precision


def test_default_precision_runs_as_before():
    """No precision: float32 models and inputs, KernelBench's fp32 tolerance, no ulp allowance in any bound."""
    result = run("ok", trials=1)
    assert exit_code(result.checks, result.ran) == EXIT_PASS, failed(result)
    assert result.info["precision"] == "fp32"
    assert check(result, "trial 1 (rand) output shape/dtype/device").detail == "(3, 8, 5, 6) float32 cpu"
    assert check(result, "trial 1 (rand) forward").data["atol"] == 1e-4
    assert not any("ulp" in c.detail for c in result.checks if c.name.startswith("fp64"))
    assert result.kernelbench["precision"] == "fp32" and result.kernelbench["tolerance"] == 1e-4


def run_autocast(name, dtype="bf16", **overrides):
    return run(name, reference=str(CONV_REFERENCE), init_args=None, input_shapes=None, autocast=dtype, **overrides)


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_correct_solution_passes_under_autocast(dtype):
    result = run_autocast("conv_groupnorm_ok", dtype)
    assert exit_code(result.checks, result.ran) == EXIT_PASS, failed(result)
    name = {"fp16": "float16", "bf16": "bfloat16"}[dtype]
    assert check(result, "trial 1 (rand) output shape/dtype/device").detail == f"(4, 8, 6, 5) {name} cpu"
    assert check(result, "trial 1 (rand) grad conv.weight").data["atol"] == 1e-2
    assert result.info["autocast"] == dtype and result.info["precision"] == "fp32"
    assert check(result, "output follows its input").verdict == "PASS"   # judged at the dtype's noise factor
    kb = result.kernelbench   # KernelBench has no autocast: its protocol at fp32
    assert kb["precision"] == "fp32" and kb["tolerance"] == 1e-4 and "no autocast" in kb["note"]


def test_solution_that_ignores_autocast_fails_on_its_output_dtype():
    result = run_autocast("conv_groupnorm_ignores_autocast", trials=1)
    layout = check(result, "trial 1 (rand) output shape/dtype/device")
    assert layout.ok is False and "dtype torch.float32 vs reference torch.bfloat16" in layout.detail
    assert exit_code(result.checks, result.ran) == EXIT_FAIL


def test_wrong_eps_fails_under_autocast():
    result = run_autocast("conv_groupnorm_wrong_eps", trials=1)
    names = failed(result)
    assert exit_code(result.checks, result.ran) == EXIT_FAIL
    assert "trial 1 (rand) forward" in names and "fp64 (2 of 4 samples) forward" in names
    assert "less accurate than the reference" in check(result, "trial 1 (rand) forward").detail


# ---- the benchmark ---------------------------------------------------------------------------------------------

class Probe(torch.autograd.Function):
    """Identity that records whether autocast is on where its forward and its backward run."""
    seen: list = []

    @staticmethod
    def forward(ctx, x):
        Probe.seen.append(("forward", torch.is_autocast_enabled("cpu"), x.dtype))
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        Probe.seen.append(("backward", torch.is_autocast_enabled("cpu"), grad.dtype))
        return grad


class Probed(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(4, 3)

    def forward(self, x):
        return Probe.apply(self.linear(x))


def test_bench_times_every_forward_under_autocast_and_every_backward_outside(monkeypatch):
    from kgen.validate import bench

    compiled = []
    monkeypatch.setattr(bench, "time_compiled", lambda *args: compiled.append(args[-1]) or {})
    Probe.seen = []
    ctx = context(autocast=torch.bfloat16)
    result = bench.run_bench(Probed(), Probed(), lambda: [torch.rand(2, 4)], backward=True, device=ctx.device,
                             min_run_time=0.001, log=lambda line: None, forward_context=ctx.autocasting)
    assert result["forward"]["new_ms"] > 0 and result["forward_backward"]["eager_ms"] > 0
    forwards = [s for s in Probe.seen if s[0] == "forward"]
    backwards = [s for s in Probe.seen if s[0] == "backward"]
    assert forwards and all(on and dtype == torch.bfloat16 for _, on, dtype in forwards)
    assert backwards and not any(on for _, on, _ in backwards)
    assert compiled == [ctx.autocasting]   # torch.compile's contender is timed under it too


def test_bench_stage_times_the_models_and_inputs_at_the_precision(monkeypatch, tmp_path):
    from kgen.validate import bench, runner
    from kgen.validate.context import Results

    given = {}
    monkeypatch.setattr(bench, "run_bench", lambda ref, new, make, **kw: given.update(
        ref=ref, new=new, inputs=make(), **kw) or {"method": "stub"})
    ctx = Context(config={"precision": "bf16"}, results=Results(tmp_path / "result.json"), device=torch.device("cpu"),
                  atol=1e-2, rtol=1e-2, seed=42, cast=torch.bfloat16, specs=[InputSpec((2, 4), torch.float32)])
    ctx.ref_mod = type("Reference", (), {"get_inputs": staticmethod(lambda: [torch.rand(2, 4)])})
    ctx.ref_model = ctx.new_model = ctx.construct(torch.nn.Linear, init=[4, 3])
    runner.stage_bench(ctx)
    assert given["inputs"][0].dtype == torch.bfloat16 and given["new"].weight.dtype == torch.bfloat16
    assert given["forward_context"] == ctx.autocasting
    assert ctx.results.data["bench"] == {"method": "stub", "precision": "bf16", "autocast": None,
                                         "channels_last": False}


# ---- the verdicts ------------------------------------------------------------------------------------------

def kernelbench_result(**extra) -> dict:
    return {"correct": True, "tolerance": 1e-2, "num_correct_trials": 1, "inputs": "reference's get_inputs()",
            "trials": [{"ok": True}], **extra}


def test_kernelbench_verdict_says_its_precision():
    from kgen.validate.report import render_bench
    from kgen.validate.verdicts import kernelbench_verdict

    summary = kernelbench_verdict([], kernelbench_result(precision="bf16"), True)["summary"]
    assert summary.startswith("forward only, --precision bf16, atol=rtol=1e-2: 1 of 1 trials correct")
    fp32 = kernelbench_verdict([], kernelbench_result(precision="fp32", tolerance=1e-4), True)["summary"]
    assert fp32.startswith("forward only, atol=rtol=1e-4: 1 of 1")
    autocast = kernelbench_verdict([], kernelbench_result(precision="fp32", tolerance=1e-4,
                                                          note="KernelBench has no autocast"), True)["summary"]
    assert autocast.startswith("forward only, fp32 (KernelBench has no autocast), atol=rtol=1e-4")
    assert render_bench({"method": "m", "precision": "fp32", "autocast": "bf16"}).startswith(
        "benchmark (autocast bf16 (float32 model and inputs, every forward under torch.autocast); m)")


@pytest.mark.parametrize("precision", ["fp16", "bf16"])
def test_an_output_that_only_rounding_moves_is_not_judged_for_following_its_input(precision):
    """L2-23's output (the mean of a GroupNorm's output: its bias's mean whatever the input) at float16: between
    two inputs the reference's output moves by rounding alone, more than its jitter shows. A solution that rounds
    once (as a fused kernel does) is correct; the float64 copy's change says the reference's is rounding, and the
    guard takes no verdict from it."""
    gn_mean = RUNTIME_FILES / "reference_gn_mean.py.txt"
    result = run("gn_mean_rounds_once", reference=str(gn_mean), init_args=None, input_shapes=[[4, 8, 64, 64]],
                 precision=precision)
    assert exit_code(result.checks, result.ran) == EXIT_PASS, failed(result)
    dependence = check(result, "output follows its input")
    assert dependence.ok is not False and "not judged" in dependence.detail, dependence.detail
