"""The runtime checks themselves, run on the CPU: the child process (kgen.validate.runner) on small
pure-PyTorch "solutions" with one planted defect each. On a GPU the same code runs with device "cuda";
only the building of kernels and CUDA's own errors are not exercised here."""
import io
import json

import pytest

from kgen.validate import validate
from kgen.validate.checks import EXIT_BROKEN, EXIT_FAIL, EXIT_PASS, exit_code
from kgen.validate.runtime import run_child
from kgen.validate.stages.sensitivity import ESCALATED_ULPS
from tests.validate.helpers import REFERENCE, RUNTIME_FILES

SMALL = {"device": "cpu", "trials": 2, "atol": 1e-4, "rtol": 1e-4, "backward": True, "bench": False,
         "init_args": [8, 2], "input_shapes": [[3, 8, 5, 6]]}

# file -> (exit code, names (or name endings) of checks that must fail; every other check must not fail)
EXPECTED = {
    "ok": (EXIT_PASS, []),
    "own_init_args": (EXIT_PASS, []),
    "wrong_variance": (EXIT_FAIL, ["trial 1 (rand) forward", "trial 2 (3+2*randn) forward",
                                   "trial 1 (rand) grad input[0]", "trial 1 (rand) grad gn.weight",
                                   "trial 2 (3+2*randn) grad input[0]", "trial 2 (3+2*randn) grad gn.weight",
                                   "eval mode (rand) forward", "eval mode (rand) grad input[0]",
                                   "eval mode (rand) grad gn.weight", "fp64 (2 of 3 samples) forward", "fp64 (2 of 3 samples) grad input[0]",
                                   "fp64 (2 of 3 samples) grad gn.weight"]),
    "writes_input": (EXIT_FAIL, ["inputs untouched", "deterministic", "grad input[0]"]),
    "aliases_input": (EXIT_FAIL, ["inputs untouched", "output does not alias an input", "deterministic",
                                  "grad input[0]"]),
    # caches its first result: the first call is KernelBench's protocol's, so every kgen trial gets a stale output
    "caches_output": (EXIT_FAIL, ["trial 1 (rand) forward", "trial 2 (3+2*randn) forward", "eval mode (rand) forward",
                                  "deterministic",
                                  "backward", "output follows its input", "fp64 (2 of 3 samples) forward"]),
    "nondeterministic": (EXIT_FAIL, ["trial 1 (rand) deterministic", "trial 2 (3+2*randn) deterministic"]),
    "different_init": (EXIT_FAIL, ["state_dict values (same RNG draws)", "forward", "grad input[0]"]),
    "extra_parameter": (EXIT_FAIL, ["state_dict keys and shapes", "load_state_dict(Model().state_dict(), strict=True)",
                                    "grad scale"]),
    "not_trainable": (EXIT_FAIL, ["trial 1 (rand) backward", "trial 2 (3+2*randn) backward",
                                  "eval mode (rand) backward"]),
    "wrong_grad": (EXIT_FAIL, ["trial 1 (rand) grad input[0]", "trial 2 (3+2*randn) grad input[0]",
                               "eval mode (rand) grad input[0]",
                               "fp64 (2 of 3 samples) grad input[0]"]),
    "wrong_shape": (EXIT_FAIL, ["output shape/dtype/device", "output contiguous", "fp64 (2 of 3 samples) forward"]),
    # right in training mode only: the eval-mode trial is where it shows (stages/modes.py)
    "wrong_in_eval": (EXIT_FAIL, ["eval mode (rand) forward", "eval mode (rand) grad input[0]",
                                  "eval mode (rand) grad gn.weight"]),
    "noncontiguous": (EXIT_FAIL, ["trial 1 (rand) output contiguous", "trial 2 (3+2*randn) output contiguous",
                                  "eval mode (rand) output contiguous"]),
    "forward_raises": (EXIT_BROKEN, ["exception"]),
    "import_error": (EXIT_BROKEN, ["import"]),
    "build_error": (EXIT_BROKEN, ["build"]),
    "crashes": (EXIT_BROKEN, ["runtime"]),
}


def run(name, timeout=120, **overrides):
    config = {**SMALL, "solution": str(RUNTIME_FILES / f"{name}.py.txt"), "reference": str(REFERENCE), **overrides}
    return run_child(config, timeout)


def matches(check_name, pattern):
    return check_name == pattern or check_name.endswith(" " + pattern)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_runtime_verdicts(name):
    code, patterns = EXPECTED[name]
    result = run(name)
    failed = [c.name for c in result.checks if c.ok is False]
    assert exit_code(result.checks, result.ran) == code, failed
    for pattern in patterns:
        assert any(matches(f, pattern) for f in failed), (pattern, failed)
    for f in failed:
        assert any(matches(f, p) for p in patterns), (f, "failed unexpectedly")


def test_ok_runs_every_stage():
    result = run("ok")
    names = [c.name for c in result.checks]
    for expected in ("build + import", "state_dict keys and shapes", "state_dict values (same RNG draws)",
                     "trial 1 (rand) forward", "trial 2 (3+2*randn) forward", "trial 1 (rand) inputs untouched",
                     "trial 1 (rand) output does not alias an input", "trial 1 (rand) deterministic",
                     "trial 1 (rand) grad input[0]", "trial 2 (3+2*randn) grad gn.bias",
                     "fp64 (2 of 3 samples) forward", "fp64 (2 of 3 samples) grad gn.weight"):
        assert expected in names
    forward = next(c for c in result.checks if c.name == "trial 1 (rand) forward")
    assert forward.data["max_abs"] < 1e-5 and forward.data["allclose"] is True
    assert result.info["init_args"] == [8, 2] and result.info["input_shapes"] == [[3, 8, 5, 6]]


def test_solution_init_args_are_used_when_they_differ():
    result = run("own_init_args", init_args=None)
    note = next(c for c in result.checks if c.name == "init args")
    assert note.verdict == "INFO"
    assert "[8, 4]" in note.detail and "[64, 8]" in note.detail and "using the solution's" in note.detail
    assert result.info["init_args"] == [8, 4]


def test_no_backward_skips_gradients():
    result = run("wrong_grad", backward=False, trials=1)
    assert not [c for c in result.checks if "grad" in c.name]
    assert exit_code(result.checks, result.ran) == EXIT_PASS


@pytest.mark.parametrize("tf32", [True, False])
def test_tf32_setting_reaches_the_child_before_it_runs(tf32):
    # the child's flags as its environment stage saw them (kgen validate --no-tf32 gives tf32=False); the
    # default leaves PyTorch's own (cuDNN TF32 on, matmul TF32 off), both switched off with tf32=False
    result = run("ok", tf32=tf32, trials=1, backward=False)
    assert exit_code(result.checks, result.ran) == EXIT_PASS
    assert result.info["cudnn_allow_tf32"] is tf32
    assert result.info["matmul_allow_tf32"] is False


def test_hang_times_out_and_leaves_the_checks_found_before():
    result = run("hangs", timeout=8)
    assert exit_code(result.checks, result.ran) == EXIT_BROKEN
    assert "timed out after 8 s (hung kernel?)" in result.checks[-1].detail
    assert "KernelBench protocol" in result.checks[-1].detail   # the stage it hung in: the first forward
    assert any(c.name == "state_dict keys and shapes" and c.ok for c in result.checks)


def test_build_error_shows_the_compiler_message():
    check = run("build_error").checks[-1]
    assert check.detail.startswith('build failed: kernel.cu(12): error: identifier "blockIdxx" is undefined')
    assert "1 error detected" in check.detail


def test_bench_reports_every_contender():
    result = run("ok", bench=True, bench_min_run_time=0.01, trials=1)
    bench = result.bench
    assert set(bench["contenders"]) == {"new", "eager", "compile"}
    for mode in ("forward", "forward_backward"):
        assert bench[mode]["new_ms"] > 0 and bench[mode]["eager_ms"] > 0
        assert bench[mode]["speedup_vs_eager"] == pytest.approx(bench[mode]["eager_ms"] / bench[mode]["new_ms"])


def test_validate_end_to_end_with_the_runtime_on_cpu(monkeypatch, tmp_path):
    """The whole validate() path, runtime included (static checks fail: these files build no kernels)."""
    monkeypatch.setattr("kgen.validate.core.cuda_available", lambda: True)
    monkeypatch.setattr("kgen.validate.core.RUNTIME_DEVICE", "cpu")
    report = tmp_path / "report.json"
    out = io.StringIO()
    code = validate(str(RUNTIME_FILES / "wrong_variance.py.txt"), ref=str(REFERENCE), trials=1, json_path=report,
                    init_args=[8, 2], input_shapes=[[3, 8, 5, 6]], out=out)
    assert code == EXIT_FAIL
    data = json.loads(report.read_text())
    assert data["runtime_ran"] is True and data["info"]["init_args"] == [8, 2]
    failed = {c["name"] for c in data["checks"] if c["verdict"] == "FAIL"}
    assert {"calls load_inline", "has a __global__ kernel", "trial 1 (rand) forward"} <= failed
    forward = next(c for c in data["checks"] if c["name"] == "trial 1 (rand) forward")
    assert forward["data"]["max_abs"] > 1e-3
    assert "trial 1 (rand) forward" in out.getvalue() and "RESULT: FAIL" in out.getvalue()


def test_validate_end_to_end_timeout(monkeypatch):
    monkeypatch.setattr("kgen.validate.core.cuda_available", lambda: True)
    monkeypatch.setattr("kgen.validate.core.RUNTIME_DEVICE", "cpu")
    out = io.StringIO()
    code = validate(str(RUNTIME_FILES / "hangs.py.txt"), ref=str(REFERENCE), trials=1, timeout=6,
                    init_args=[8, 2], input_shapes=[[3, 8, 5, 6]], out=out)
    assert code == EXIT_BROKEN
    assert "timed out after 6 s (hung kernel?)" in out.getvalue()


NOISY_REFERENCE = RUNTIME_FILES / "reference_noisy_fp32_weight_grad.py.txt"


def test_parameter_gradient_more_accurate_than_the_reference_passes_by_float64_arbitration():
    result = run("ok", reference=str(NOISY_REFERENCE))
    weight = [c for c in result.checks if c.name.endswith("grad gn.weight") and c.name.startswith("trial")]
    assert weight and all(c.ok for c in weight)
    assert all("float64 arbiter" in c.detail and "as accurate as the reference" in c.detail for c in weight)
    assert exit_code(result.checks, result.ran) == EXIT_PASS


def test_parameter_gradient_less_accurate_than_the_reference_fails_arbitration():
    result = run("noisier_weight_grad", reference=str(NOISY_REFERENCE))
    weight = [c for c in result.checks if c.name.endswith("grad gn.weight") and c.name.startswith("trial")]
    assert weight and not any(c.ok for c in weight)
    assert all("less accurate than the reference" in c.detail for c in weight)


BROADCAST_REFERENCE = RUNTIME_FILES / "reference_noisy_broadcast.py.txt"
CLAMP_REFERENCE = RUNTIME_FILES / "reference_clamp_on_grid.py.txt"


def test_float64_arbiter_takes_the_whole_batch_when_samples_cannot_be_chunked():
    """L2-75's shape: the output broadcasts the batch into a later dim, so the arbiter cannot cut the batch
    into chunks; it takes the whole batch at once and clears the more accurate solution."""
    result = run("broadcast_exact", reference=str(BROADCAST_REFERENCE), init_args=[24, 32, 4, [1, 32, 1, 1]],
                 input_shapes=[[16, 24]])
    weight = [c for c in result.checks if c.name.endswith("grad gemm.weight") and c.name.startswith("trial")]
    assert weight and all(c.ok for c in weight)
    assert all("float64 arbiter (whole batch)" in c.detail and "as accurate as the reference" in c.detail
               for c in weight)
    assert exit_code(result.checks, result.ran) == EXIT_PASS


def test_kink_crossed_by_rounding_passes_by_the_references_rounding_sensitivity():
    """L2-85's case: values on a clamp bound that the solution rounds one ulp under it. float64 agrees with
    the reference, so only the reference's own sensitivity to rounding (Monte Carlo arithmetic) clears it."""
    result = run("clamp_rounds_under_bound", reference=str(CLAMP_REFERENCE), init_args=[4096],
                 input_shapes=[[64, 4096]])
    grads = [c for c in result.checks if c.name.endswith("grad input[0]") and c.name.startswith("trial")]
    assert grads and all(c.ok for c in grads)
    assert all("less accurate than the reference" in c.detail for c in grads)   # float64 alone would fail it
    assert all("within the reference's rounding noise" in c.detail for c in grads)
    assert all(c.data["sensitivity"]["solution_outside"] > 0 for c in grads)    # the kink really was crossed
    assert exit_code(result.checks, result.ran) == EXIT_PASS


def test_kink_beyond_the_first_jitter_passes_by_the_escalated_draws():
    """L2-85 with `3+2*randn` inputs: the solution crosses a kink that the first three 4-ulp draws of the
    reference's arithmetic do not reach. The disputed gradient gets more draws at a larger jitter, which do."""
    result = run("clamp_crosses_near_bound", reference=str(RUNTIME_FILES / "reference_clamp_near_bound.py.txt"),
                 init_args=[4096], input_shapes=[[64, 4096]])
    grads = [c for c in result.checks if c.name.endswith("grad input[0]") and c.name.startswith("trial")]
    assert grads and all(c.ok for c in grads), [c.detail for c in grads]
    assert all("less accurate than the reference" in c.detail for c in grads)   # float64 alone would fail it
    assert all(c.data["sensitivity"]["solution_outside"] > 0 for c in grads)    # the kink really was crossed
    assert all(c.data["sensitivity"]["jitter_ulps"] == ESCALATED_ULPS for c in grads)   # the first draws missed it
    assert exit_code(result.checks, result.ran) == EXIT_PASS


def test_gradient_wrong_over_a_band_at_a_kink_fails_the_rounding_sensitivity_arbiter():
    """The same reference, a backward that blocks the gradient over a band below the bound: as large a jump
    per element as a rounding flip, but in four times as many places. It fails."""
    result = run("clamp_gradient_band_wrong", reference=str(CLAMP_REFERENCE), init_args=[4096],
                 input_shapes=[[64, 4096]])
    failed = [c for c in result.checks if c.ok is False]
    assert failed and all(c.name.endswith("grad input[0]") for c in failed)
    assert all("beyond the reference's rounding noise" in c.detail for c in failed)
    assert exit_code(result.checks, result.ran) == EXIT_FAIL


def test_a_reference_that_draws_and_returns_a_view_passes_its_faithful_solution():
    """Dropout in training mode: the compared calls start from one random state, so the same PyTorch calls draw
    the same mask; and an output may be non-contiguous where the reference's is (a transposed view)."""
    result = run("same_dropout_transposed", reference=str(RUNTIME_FILES / "reference_dropout_transposed.py.txt"))
    failed = [c.name for c in result.checks if c.ok is False]
    assert exit_code(result.checks, result.ran) == EXIT_PASS, failed
    names = [c.name for c in result.checks]
    assert "trial 1 (rand) forward" in names and "trial 1 (rand) output contiguous" in names


ARGMAX_REFERENCE = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gn = nn.GroupNorm(2, 6)

    def forward(self, x):
        values, indices = torch.max(torch.relu(self.gn(x)), dim=1)
        return values, indices


def get_inputs():
    return [torch.randn(3, 6, 5, 5)]


def get_init_inputs():
    return []
'''

# the forward's value, and twice its gradient: a backward no forward check sees
DOUBLED_GRADIENT = '''

class _Twice(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        return 2 * grad


class ModelNew(Model):
    def forward(self, x):
        values, indices = super().forward(x)
        return _Twice.apply(values), indices
'''


@pytest.mark.parametrize("solution, code", [("\nModelNew = Model\n", EXIT_PASS), (DOUBLED_GRADIENT, EXIT_FAIL)])
def test_a_reference_with_an_integer_output_has_its_gradients_judged(tmp_path, solution, code):
    """torch.max(y, dim)'s indices are an output without a gradient: the upstream gradients skip it (no random draw
    of an integer dtype, which raised), and every gradient check runs, in the trials and against float64."""
    reference = tmp_path / "argmax_reference.py"
    reference.write_text(ARGMAX_REFERENCE)
    path = tmp_path / "argmax_solution.py"
    path.write_text(ARGMAX_REFERENCE + solution)
    result = run_child({**SMALL, "init_args": None, "input_shapes": None, "solution": str(path),
                        "reference": str(reference)}, 120)
    names = [c.name for c in result.checks]
    assert exit_code(result.checks, result.ran) == code, [(c.name, c.detail[:200]) for c in result.checks if not c.ok]
    assert "trial 1 (rand) grad input[0]" in names and any(n.startswith("fp64") and "grad gn.weight" in n for n in names)
    failed = [c.name for c in result.checks if c.ok is False]
    assert all("grad" in n for n in failed) and (code == EXIT_PASS) == (not failed), failed


FIXED_BATCH_REFERENCE = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gn = nn.GroupNorm(4, 8)

    def forward(self, x):
        return torch.relu(self.gn(x)).reshape(3, 4, -1).amax(-1)


def get_inputs():
    return [torch.randn(3, 8, 5, 5)]


def get_init_inputs():
    return []

ModelNew = Model
'''


def test_a_reference_that_refuses_a_slice_of_its_batch_is_checked_on_the_whole_batch(tmp_path):
    """Its forward reads the batch size as a constant (reshape(3, 4, -1)): the float64 cross-check, which runs on a
    slice of the batch, runs on all of it, as the trials did, instead of calling the solution broken."""
    path = tmp_path / "fixed_batch.py"
    path.write_text(FIXED_BATCH_REFERENCE)
    result = run_child({**SMALL, "init_args": None, "input_shapes": None, "solution": str(path),
                        "reference": str(path)}, 120)
    assert exit_code(result.checks, result.ran) == EXIT_PASS, [(c.name, c.detail[:300]) for c in result.checks
                                                                 if not c.ok]
    assert any(c.name.startswith("fp64 (3 of 3 samples) grad") for c in result.checks)


def test_a_reference_that_cannot_run_in_eval_mode_skips_the_eval_trial():
    """Nothing to hold the solution to in eval mode: the trial says so, and a correct solution passes."""
    result = run("eval_refused_ok", reference=str(RUNTIME_FILES / "eval_refused_reference.py.txt"))
    assert exit_code(result.checks, result.ran) == EXIT_PASS, [c.name for c in result.checks if c.ok is False]
    skipped = {c.name: c.detail for c in result.checks if c.ok is None}
    assert "this model only trains" in skipped["eval mode (rand) forward"]
    assert "eval mode (rand) backward" in skipped
