"""validate(...) on a machine without CUDA: exit codes, the "not run" message, reference resolution from
the kgen header, and the JSON report."""
import io
import json

import pytest

from kgen.validate import EXIT_BROKEN, EXIT_FAIL, EXIT_NO_CUDA, NOT_RUN_NO_CUDA, validate
from tests.validate.helpers import FILES, REFERENCE

HEADER = '# kgen-spec: groupnorm\n# kgen-params: {"block_size": 256, "groups": 8}\n# kgen-version: 0.1.0\n'


@pytest.fixture(autouse=True)
def no_cuda(monkeypatch):
    """These tests are about the GPU-less outcome, wherever they run."""
    monkeypatch.setattr("kgen.validate.core.cuda_available", lambda: False)


def run(path, **kwargs):
    out = io.StringIO()
    code = validate(str(path), out=out, **kwargs)
    return code, out.getvalue()


def test_good_file_without_cuda_is_not_run_not_passed():
    code, text = run(FILES / "good.py.txt", ref=REFERENCE)
    assert code == EXIT_NO_CUDA == 3
    assert NOT_RUN_NO_CUDA in text
    assert "RUNTIME CHECKS NOT RUN: no CUDA device" in text
    assert "PASS - every check passed" not in text


@pytest.mark.parametrize("name", ["syntax_error", "missing_modelnew"])
def test_broken_files_exit_2(name):
    code, text = run(FILES / f"{name}.py.txt", ref=REFERENCE)
    assert code == EXIT_BROKEN
    assert "RESULT: BROKEN" in text


@pytest.mark.parametrize("name", ["try_except", "pass_statement", "threading", "multiprocessing", "stream",
                                  "cuda_stream_create", "tensor_subclass", "timer_patch", "numpy_import",
                                  "wrong_init", "no_load_inline", "no_global_kernel"])
def test_rule_violations_exit_1_even_without_cuda(name):
    code, text = run(FILES / f"{name}.py.txt", ref=REFERENCE)
    assert code == EXIT_FAIL
    assert "RESULT: FAIL" in text and NOT_RUN_NO_CUDA in text


def test_no_header_and_no_ref_is_broken():
    code, text = run(FILES / "good.py.txt")
    assert code == EXIT_BROKEN
    assert "no kgen header: pass --ref REFERENCE.py" in text


def test_header_names_the_reference(tmp_path):
    solution = tmp_path / "solution.py"
    solution.write_text(HEADER + (FILES / "good.py.txt").read_text())
    report = tmp_path / "report.json"
    code, text = run(solution, json_path=report)
    assert code == EXIT_NO_CUDA
    data = json.loads(report.read_text())
    assert data["reference"].endswith("level1_35_groupnorm.py")
    assert data["spec"] == "groupnorm" and data["params"] == {"block_size": 256, "groups": 8}
    assert data["exit_code"] == 3 and data["runtime_ran"] is False
    assert data["torch_version"]
    assert "level1_35_groupnorm.py" in text and "groupnorm" in text


def test_unknown_spec_in_header_is_broken(tmp_path):
    solution = tmp_path / "solution.py"
    solution.write_text(HEADER.replace("groupnorm", "nosuchspec") + (FILES / "good.py.txt").read_text())
    code, text = run(solution)
    assert code == EXIT_BROKEN and "nosuchspec" in text


def test_missing_files_are_broken(tmp_path):
    assert run(tmp_path / "absent.py", ref=REFERENCE)[0] == EXIT_BROKEN
    assert run(FILES / "good.py.txt", ref=tmp_path / "absent_ref.py")[0] == EXIT_BROKEN


def test_json_report_has_every_check(tmp_path):
    report = tmp_path / "r.json"
    code, _ = run(FILES / "try_except.py.txt", ref=REFERENCE, json_path=report, atol=1e-2, rtol=1e-3)
    data = json.loads(report.read_text())
    assert data["exit_code"] == code == EXIT_FAIL
    assert data["result"] == "FAIL"
    assert data["settings"]["atol"] == 1e-2 and data["settings"]["rtol"] == 1e-3
    failed = [c for c in data["checks"] if c["verdict"] == "FAIL"]
    assert [c["name"] for c in failed] == ["no try/except"]
    assert failed[0]["data"]["line"] > 0
    assert data["checks"][-1]["name"] == "runtime checks" and data["checks"][-1]["verdict"] == "SKIP"


def test_table_lists_each_check_with_its_verdict():
    _, text = run(FILES / "good.py.txt", ref=REFERENCE)
    for name in ("parses", "no try/except", "no pass", "ModelNew.__init__ signature"):
        line = next(l for l in text.splitlines() if l.startswith(name))
        assert " PASS " in line
