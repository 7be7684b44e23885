"""`kgen validate` judges any KernelBench solution the way KernelBench does (its protocol:
same seed before each construction, forward only, atol=rtol=1e-4; get_inputs/get_init_inputs from the
reference when the solution has none), and reports that verdict apart from kgen's own, in the report and
the JSON; the exit code stays kgen's. The pure verdict functions, then the whole path on the CPU."""
import io
import json

import pytest

from kgen.validate import EXIT_FAIL, EXIT_NO_CUDA, EXIT_PASS, validate
from kgen.validate.checks import broken, failed, note, passed, skipped
from kgen.validate.runtime import run_child
from kgen.validate.static import static_checks
from kgen.validate.verdicts import kernelbench_verdict, kgen_verdict
from tests.validate.helpers import FILES, REFERENCE, RUNTIME_FILES

SMALL = {"init_args": [8, 2], "input_shapes": [[3, 8, 5, 6]], "trials": 2}
KB_OK = {"correct": True, "tolerance": 1e-4, "num_correct_trials": 5, "inputs": "reference's get_inputs()",
         "trials": [{"ok": True}] * 5}
KB_BAD = {"correct": False, "tolerance": 1e-4, "num_correct_trials": 5, "inputs": "reference's get_inputs()",
          "trials": [{"ok": True}, {"ok": False, "problem": "output mismatch: max|Δ| 0.1"}] + [{"ok": True}] * 3}


# ---- the verdict functions -------------------------------------------------------------------------------

def test_kgen_verdict_groups_failures_by_area():
    checks = [passed("parses"), failed("no pass", "line 3"), failed("state_dict keys and shapes", "missing"),
              failed("trial 1 (rand) backward", "not trainable"), failed("trial 2 (3+2*randn) backward", "x"),
              failed("trial 1 (rand) grad gn.weight", "x"), failed("trial 1 (rand) deterministic", "x"),
              failed("fp64 (2 of 4 samples) forward", "x"), failed("kernels: forward", "none"),
              failed("trial 1 (rand) inputs untouched", "x"), failed("trial 1 (rand) forward", "x"),
              note("init args", "[1]")]
    verdict = kgen_verdict(checks, EXIT_FAIL)
    assert verdict["verdict"] == "FAIL"
    assert list(verdict["failed"]) == ["static", "state_dict", "forward", "inputs", "determinism", "gradients",
                                       "float64", "kernels"]
    assert verdict["failed"]["gradients"] == ["trial 1 (rand) backward", "trial 2 (3+2*randn) backward",
                                              "trial 1 (rand) grad gn.weight"]
    assert "gradients: trial 1 (rand) backward, trial 2 (3+2*randn) backward (+1 more)" in verdict["summary"]
    assert verdict["summary"].endswith("; kernels: forward")          # not "kernels: kernels: forward"
    assert kgen_verdict([passed("parses")], EXIT_PASS)["verdict"] == "PASS"
    assert kgen_verdict([broken("build", "nvcc")], 2)["failed"] == {"broken": ["build"]}


@pytest.mark.parametrize("checks, kb, ran, word, words", [
    ([passed("parses")], KB_OK, True, "PASS", ["5 of 5 trials correct", "atol=rtol=1e-4"]),
    ([passed("parses")], KB_BAD, True, "FAIL", ["4 of 5", "output mismatch"]),
    # kgen's own failures (gradients, state_dict) are not KernelBench's business
    ([failed("trial 1 (rand) backward", "x"), failed("state_dict keys and shapes", "x")], KB_OK, True, "PASS", []),
    # KernelBench's static checker's strict rules
    ([failed("no try/except", "line 3")], KB_OK, True, "FAIL", ["static checker rejects the file: no try/except"]),
    # kgen fails extra CUDA streams; KernelBench only warns
    ([failed("no extra CUDA streams", "line 3")], KB_OK, True, "PASS", []),
    ([broken("build", "build failed: x.cu(3): error")], None, True, "FAIL", ["would not compile or run: build"]),
    ([passed("parses"), skipped("runtime checks", "no CUDA")], None, False, "NOT RUN", ["no CUDA device"]),
    ([broken("reference", "no kgen header")], None, False, "NOT RUN", []),
])
def test_kernelbench_verdict(checks, kb, ran, word, words):
    verdict = kernelbench_verdict(checks, kb, ran)
    assert verdict["verdict"] == word, verdict
    for w in words:
        assert w in verdict["summary"], verdict["summary"]


FLOOR_STILL = {"reference_jitter_max_abs": 0.0082, "reference_jitter_outside": 0, "solution_within_noise": False}


@pytest.mark.parametrize("forward, blamed", [(passed("trial 1 (rand) forward", "within float64's bound"), False),
                                             (failed("trial 1 (rand) forward", "less accurate"), True)],
                         ids=["kgen clears the forward", "kgen fails the forward"])
def test_a_still_floor_blames_the_solution_only_where_kgen_fails_its_forward_too(forward, blamed):
    """The jitter leaves the reference within tolerance yet KernelBench's check fails: the solution's error, unless
    kgen's forward checks (float64 arbitration) cleared it (a hardshrink threshold its float32 arithmetic crosses
    where the reference's half-precision rounding does not)."""
    kb = {**KB_BAD, "trials": [{"ok": False, "problem": "output mismatch: max|Δ| 0.31", "floor": FLOOR_STILL}]}
    summary = kernelbench_verdict([passed("parses"), forward], kb, True)["summary"]
    assert ("so the mismatch is the solution's" in summary) == blamed, summary
    assert ("kgen's forward checks clear the solution against float64" in summary) == (not blamed), summary


# ---- a solution without get_inputs/get_init_inputs: INFO, not BROKEN --------------------------------------

def test_missing_input_functions_are_info_not_broken(monkeypatch):
    checks = static_checks((FILES / "third_party_groupnorm.py.txt").read_text(), REFERENCE.read_text())
    assert [c.verdict for c in checks if c.ok is not True] == ["INFO"]
    info = next(c for c in checks if c.name == "defines get_inputs, get_init_inputs")
    assert "get_inputs, get_init_inputs" in info.detail and "reference's are used" in info.detail
    monkeypatch.setattr("kgen.validate.core.cuda_available", lambda: False)
    out = io.StringIO()
    assert validate(str(FILES / "third_party_groupnorm.py.txt"), ref=str(REFERENCE), out=out) == EXIT_NO_CUDA
    assert "KernelBench verdict: NOT RUN" in out.getvalue()


def test_runner_takes_the_references_inputs_when_the_solution_has_none():
    config = {"device": "cpu", "solution": str(RUNTIME_FILES / "third_party_like.py.txt"),
              "reference": str(REFERENCE), "trials": 1, "input_shapes": [[2, 64, 4, 4]], "init_args": None}
    result = run_child(config, 120)
    init = next(c for c in result.checks if c.name == "init args")
    assert init.verdict == "INFO" and "[64, 8]" in init.detail and "the solution defines none" in init.detail
    assert result.info["init_args"] == [64, 8]
    assert result.kernelbench["init_args"] == [64, 8] and result.kernelbench["correct"] is True


# ---- the whole path: both verdicts in the report and the JSON -------------------------------------------

@pytest.fixture
def cpu_runtime(monkeypatch):
    monkeypatch.setattr("kgen.validate.core.cuda_available", lambda: True)
    monkeypatch.setattr("kgen.validate.core.RUNTIME_DEVICE", "cpu")


def test_third_party_solution_kernelbench_pass_kgen_fail(cpu_runtime, tmp_path):
    out = io.StringIO()
    report = tmp_path / "report.json"
    code = validate(str(RUNTIME_FILES / "third_party_like.py.txt"), ref=str(REFERENCE), json_path=report, out=out,
                    **SMALL)
    text = out.getvalue()
    data = json.loads(report.read_text())
    assert code == EXIT_FAIL == data["exit_code"]                      # the exit code stays kgen's
    kb, kg = data["verdicts"]["kernelbench"], data["verdicts"]["kgen"]
    assert kb["verdict"] == "PASS" and kb["correct"] is True and kb["static_violations"] == []
    assert kg["verdict"] == "FAIL" and set(kg["failed"]) == {"state_dict", "gradients"}
    assert kg["failed"]["gradients"] == ["trial 1 (rand) backward", "trial 2 (3+2*randn) backward",
                                         "eval mode (rand) backward"]
    assert "load_state_dict(Model().state_dict(), strict=True)" in kg["failed"]["state_dict"]
    assert data["kernelbench"]["num_correct_trials"] == 5 and len(data["kernelbench"]["trials"]) == 5
    kb_line = next(l for l in text.splitlines() if l.startswith("KernelBench verdict:"))
    kgen_line = next(l for l in text.splitlines() if l.startswith("kgen verdict:"))
    assert kb_line.startswith("KernelBench verdict: PASS (forward only, atol=rtol=1e-4: 5 of 5 trials correct")
    assert kgen_line.startswith("kgen verdict:        FAIL (state_dict: state_dict keys and shapes")
    assert "gradients: trial 1 (rand) backward" in kgen_line
    assert text.index("KernelBench verdict:") < text.index("RESULT: FAIL")


def test_kernelbench_fails_what_its_protocol_catches(cpu_runtime, tmp_path):
    report = tmp_path / "report.json"
    code = validate(str(RUNTIME_FILES / "wrong_variance.py.txt"), ref=str(REFERENCE), json_path=report,
                    out=io.StringIO(), **SMALL)
    data = json.loads(report.read_text())
    assert code == EXIT_FAIL
    assert data["verdicts"]["kernelbench"]["verdict"] == "FAIL"
    assert data["kernelbench"]["correct"] is False
    assert "output mismatch" in data["verdicts"]["kernelbench"]["summary"]


def test_kernelbench_uses_its_own_tolerance_not_kgens(cpu_runtime, tmp_path):
    """kgen at a loose 1e-1 passes the planted variance bug's forward; KernelBench at 1e-4 still does not."""
    report = tmp_path / "report.json"
    validate(str(RUNTIME_FILES / "wrong_variance.py.txt"), ref=str(REFERENCE), json_path=report,
             out=io.StringIO(), atol=10.0, rtol=10.0, **SMALL)
    data = json.loads(report.read_text())
    assert not [c for c in data["checks"] if c["name"].endswith(" forward") and c["verdict"] == "FAIL"]
    assert data["verdicts"]["kernelbench"]["verdict"] == "FAIL"


# ---- what the reference itself cannot do is not the solution's failure ------------------------------------

def test_reference_whose_backward_raises_runs_as_no_backward(cpu_runtime, tmp_path):
    """Floor division has no derivative: the reference's own backward raises, so the gradients are not compared
    (one SKIP naming the reference's error) and nothing is BROKEN; the forward checks still run."""
    report = tmp_path / "report.json"
    code = validate(str(RUNTIME_FILES / "floor_divide_solution.py.txt"),
                    ref=str(RUNTIME_FILES / "reference_floor_divide.py.txt"), json_path=report, out=io.StringIO(),
                    trials=2)
    data = json.loads(report.read_text())
    checks = {c["name"]: c for c in data["checks"]}
    assert data["verdicts"]["kgen"]["verdict"] != "BROKEN", data["verdicts"]["kgen"]
    assert checks["backward"]["verdict"] == "SKIP"
    assert "reference's own backward raises" in checks["backward"]["detail"]
    assert "floor_divide" in checks["backward"]["detail"]
    assert checks["trial 1 (rand) forward"]["verdict"] == "PASS"
    assert not [name for name in checks if " grad " in name]
    assert code != 2


def test_reference_failing_under_kernelbench_protocol_is_not_applicable(cpu_runtime, tmp_path):
    """KernelBench casts every input tensor to float32: an nn.Embedding's indices then fail in the reference
    itself. The KernelBench verdict says so (no correctness either way), kgen's own checks take the reference's
    integer input."""
    report = tmp_path / "report.json"
    validate(str(RUNTIME_FILES / "embedding_indices_solution.py.txt"),
             ref=str(RUNTIME_FILES / "reference_embedding_indices.py.txt"), json_path=report, out=io.StringIO(),
             trials=2)
    data = json.loads(report.read_text())
    kb = data["verdicts"]["kernelbench"]
    # (this test solution is plain PyTorch: KernelBench's static checker still rejects it for that alone)
    assert kb["correct"] is None and "reference itself fails under KernelBench's protocol" in kb["summary"]
    assert data["verdicts"]["kgen"]["verdict"] != "BROKEN", data["verdicts"]["kgen"]
    checks = {c["name"]: c for c in data["checks"]}
    assert checks["trial 1 (rand) forward"]["verdict"] == "PASS"


def test_reference_with_a_whole_batch_number_output_is_arbitrated(cpu_runtime, tmp_path):
    """An output that is one number of the whole batch (y.sum()): no per-sample slice of it exists, so the float64
    arbiter runs the batch whole instead of raising (slice() of a 0-dim tensor would make the verdict BROKEN). The solution's weight
    gradient is 2e-4 off, so that the arbiter must run."""
    report = tmp_path / "report.json"
    code = validate(str(RUNTIME_FILES / "full_sum_solution.py.txt"), ref=str(RUNTIME_FILES / "reference_full_sum.py.txt"),
                    json_path=report, out=io.StringIO(), trials=2)
    data = json.loads(report.read_text())
    checks = {c["name"]: c for c in data["checks"]}
    assert data["verdicts"]["kgen"]["verdict"] != "BROKEN", data["verdicts"]["kgen"]
    assert code != 2
    weight = [c for name, c in checks.items() if name.startswith("trial") and name.endswith("grad gn.weight")]
    assert weight and all("float64 arbiter (whole batch)" in c["detail"] for c in weight), weight
    assert all(c["verdict"] == "FAIL" for c in weight)   # 2e-4 off: less accurate than the reference


def test_reference_with_two_outputs_is_not_applicable_to_kernelbench(cpu_runtime, tmp_path):
    """KernelBench compares one output tensor: a reference returning two would fail its own evaluator, so the
    KernelBench verdict is "not applicable" (not a FAIL of the solution); kgen's checks compare both outputs."""
    report = tmp_path / "report.json"
    validate(str(RUNTIME_FILES / "two_outputs_solution.py.txt"), ref=str(RUNTIME_FILES / "reference_two_outputs.py.txt"),
             json_path=report, out=io.StringIO(), trials=2)
    data = json.loads(report.read_text())
    kb = data["verdicts"]["kernelbench"]
    assert kb["correct"] is None and "returns 2 outputs" in kb["summary"], kb
    assert data["verdicts"]["kgen"]["verdict"] != "BROKEN", data["verdicts"]["kgen"]
