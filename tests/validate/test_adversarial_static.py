"""The adversarial GPU files' static verdicts, without a GPU (CI): the side-stream file is rejected by
"no extra CUDA streams" (and only that); the others (a hang, a write into the input, a cached result, a
wrong output shape) pass every static check: only running them can tell. Also the expectation table
itself (tests/validate/adversarial.py) and its judge."""
import pytest

from kgen.validate.checks import EXIT_FAIL, EXIT_NO_CUDA
from tests.validate.adversarial import (GPU_CASES, GPU_STATIC_FAILURES, Case, all_cases, judge, run_case,
                                        static_cases, tagged_processes, Tagged)


@pytest.mark.parametrize("case", [c for c in static_cases() if c.name.startswith("gpu_")], ids=lambda c: c.name)
def test_gpu_file_static_verdict(case):
    outcome = run_case(case)
    assert outcome.failed == GPU_STATIC_FAILURES[case.name]
    assert outcome.code == (EXIT_FAIL if outcome.failed else EXIT_NO_CUDA)
    assert judge(case, outcome.code, outcome.failed) == []


@pytest.mark.parametrize("case", [c for c in static_cases() if not c.name.startswith("gpu_")], ids=lambda c: c.name)
def test_static_file_verdict(case):
    outcome = run_case(case)
    assert judge(case, outcome.code, outcome.failed) == [], (outcome.code, outcome.failed)


def test_every_gpu_file_has_a_docstring_naming_its_defect():
    for case in GPU_CASES:
        text = case.path.read_text()
        assert text.startswith('"""'), case.name
        if case.name != "gpu_groupnorm":
            assert "Expected:" in text.split('"""')[1], case.name


def test_case_names_are_unique_per_mode():
    keys = [(c.mode, c.name) for c in all_cases()]
    assert len(keys) == len(set(keys))
    assert all(c.path.exists() for c in all_cases())


def test_judge():
    case = Case("x", GPU_CASES[0].path, "gpu", EXIT_FAIL, ["forward"], ["grad w"])
    assert judge(case, EXIT_FAIL, ["trial 1 (rand) forward"]) == []
    assert judge(case, EXIT_FAIL, ["trial 1 (rand) forward", "trial 1 (rand) grad w"]) == []
    assert judge(case, 2, ["trial 1 (rand) forward"]) == ["exit 2, expected 1"]
    assert judge(case, EXIT_FAIL, []) == ["no failed check matches 'forward'"]
    assert judge(case, EXIT_FAIL, ["trial 1 (rand) forward", "deterministic"]) == ["unexpected failure 'deterministic'"]


def test_leftover_scan_finds_a_tagged_child_and_not_after_it_ends():
    import subprocess
    import sys
    import time

    with Tagged("scan-test") as tag:
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
        try:
            found, deadline = [], time.monotonic() + 5
            while not found and time.monotonic() < deadline:   # /proc shows the tag once the child has exec'd
                found = [pid for pid, _ in tagged_processes(tag)]
                time.sleep(0.05)
            assert found == [child.pid]
        finally:
            child.kill()
            child.wait()
        assert tagged_processes(tag) == []
