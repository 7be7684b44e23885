"""The validator on a real GPU: a small hand-written CUDA solution passes; the same with a planted bug
(the variance taken as E[x^2]) fails the numerics; one with an out-of-bounds write is reported broken; the
emitted groupnorm solution passes; --bench reports every contender. Then the adversarial files
(tests/validate/adversarial.py): a hang, a write into the input, a cached result, a wrong shape, a side
stream, each with its exit code and failed checks and no leftover process; and the CPU runtime-verdict
table run with device "cuda"."""
import io
import json

import pytest

from kgen.validate import EXIT_BROKEN, EXIT_FAIL, EXIT_PASS, validate
from tests.validate.helpers import FILES, REFERENCE

pytestmark = pytest.mark.gpu

SMALL = {"input_shapes": [[4, 64, 32, 32]], "trials": 2}


def run(path, tmp_path, **kwargs):
    out = io.StringIO()
    report = tmp_path / "report.json"
    code = validate(str(path), ref=str(REFERENCE), json_path=report, out=out, **{**SMALL, **kwargs})
    print(out.getvalue())
    return code, json.loads(report.read_text()), out.getvalue()


def failed_names(data):
    return [c["name"] for c in data["checks"] if c["verdict"] == "FAIL"]


def test_handmade_solution_passes(tmp_path):
    code, data, text = run(FILES / "gpu_groupnorm.py.txt", tmp_path)
    assert code == EXIT_PASS, failed_names(data)
    assert data["runtime_ran"] and data["gpu"]
    assert "RESULT: PASS" in text
    names = [c["name"] for c in data["checks"]]
    assert "trial 1 (rand) forward" in names and "fp64 (2 of 4 samples) forward" in names


def test_planted_variance_bug_fails(tmp_path):
    code, data, _ = run(FILES / "gpu_groupnorm_wrong_variance.py.txt", tmp_path)
    assert code == EXIT_FAIL
    assert "trial 1 (rand) forward" in failed_names(data)
    forward = next(c for c in data["checks"] if c["name"] == "trial 1 (rand) forward")
    assert forward["data"]["max_abs"] > 1e-2
    assert "fp64 (2 of 4 samples) forward" in failed_names(data)


def test_illegal_address_is_broken(tmp_path):
    code, data, text = run(FILES / "gpu_groupnorm_illegal_address.py.txt", tmp_path, timeout=240)
    assert code == EXIT_BROKEN
    assert "RESULT: BROKEN" in text


def test_emitted_solution_passes(tmp_path):
    from kgen.emit import emit

    text, _ = emit("groupnorm", {"groups": 8, "block_size": 256})
    path = tmp_path / "groupnorm.py"
    path.write_text(text)
    out = io.StringIO()
    code = validate(str(path), out=out, input_shapes=[[3, 64, 40, 24]], trials=2)   # the header names the reference
    print(out.getvalue())
    assert code == EXIT_PASS


def test_bench_on_gpu(tmp_path):
    code, data, text = run(FILES / "gpu_groupnorm.py.txt", tmp_path, bench=True, trials=1)
    assert code == EXIT_PASS
    for mode in ("forward", "forward_backward"):
        assert data["bench"][mode]["new_ms"] > 0 and data["bench"][mode]["eager_ms"] > 0
    assert "benchmark" in text


# ---- adversarial GPU files: verdict, exit code, time, no leftover process ------------------------------

from tests.validate.adversarial import (GPU_CASES, HANG_MARGIN, HANG_TIMEOUT, judge, run_case,  # noqa: E402
                                        runtime_cases)


@pytest.mark.parametrize("case", [c for c in GPU_CASES if c.name != "gpu_groupnorm_hangs"], ids=lambda c: c.name)
def test_adversarial_gpu_file(case):
    """Expected exit code and failed checks; no process of this run left behind (the children carry a tag
    in their environment, so a concurrent run of the reliability table is not mistaken for ours)."""
    outcome = run_case(case)
    print(case.name, outcome.code, outcome.failed, f"{outcome.seconds:.1f} s", outcome.detail)
    assert judge(case, outcome.code, outcome.failed) == [], (outcome.failed, outcome.detail)
    assert outcome.leftovers == [], outcome.leftovers


def test_hanging_kernel_times_out_in_its_forward_and_leaves_nothing():
    """The kernel spins for ever: validate() ends at its timeout (+ margin), exit 2, in the forward stage."""
    case = next(c for c in GPU_CASES if c.name == "gpu_groupnorm_hangs")
    outcome = run_case(case)
    assert outcome.code == EXIT_BROKEN
    timeout = next(c for c in outcome.checks if c["ok"] is False)
    assert f"timed out after {HANG_TIMEOUT:g} s (hung kernel?)" in timeout["detail"]
    assert "KernelBench protocol" in timeout["detail"]   # it got as far as running the kernel (the first forward)
    assert outcome.seconds < HANG_TIMEOUT + HANG_MARGIN, outcome.seconds
    assert outcome.leftovers == []
    assert any(c["name"] == "state_dict keys and shapes" and c["ok"] for c in outcome.checks)


@pytest.mark.parametrize("case", runtime_cases(), ids=lambda c: c.name)
def test_cpu_runtime_table_on_cuda(case):
    """The CPU runtime-verdict table (test_validate_runtime_cpu.EXPECTED, plus the hang) with device "cuda"."""
    outcome = run_case(case)
    print(case.name, outcome.code, outcome.failed, f"{outcome.seconds:.1f} s", outcome.detail)
    assert judge(case, outcome.code, outcome.failed) == [], (outcome.failed, outcome.detail)
    assert outcome.leftovers == [], outcome.leftovers
