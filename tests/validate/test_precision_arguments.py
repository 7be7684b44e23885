"""`kgen validate --precision` and `--autocast` as a user meets them: one-line errors with exit code 2 before
anything runs, KernelBench's tolerance for the dtype unless --atol/--rtol are given, and the report and its JSON
saying which precision ran (here on a machine treated as having no GPU: the static checks run, then exit 3)."""
import io
import json

import pytest

from kgen.validate import EXIT_NO_CUDA, validate
from kgen.validate.arguments import ArgumentError, default_tolerance, run_precision
from tests.validate.helpers import FILES, REFERENCE

GOOD = FILES / "good.py.txt"


@pytest.fixture(autouse=True)
def no_cuda(monkeypatch):
    monkeypatch.setattr("kgen.validate.core.cuda_available", lambda: False)


def run_cli(*args):
    from click.testing import CliRunner

    from kgen.cli import main

    return CliRunner().invoke(main, ["validate", str(GOOD), "--ref", str(REFERENCE), *map(str, args)])


def assert_one_line_error(result, *words):
    assert result.exit_code == 2, (result.exit_code, result.output)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("kgen: error: "), result.stderr
    assert "Traceback" not in result.output and "Usage:" not in result.output
    for word in words:
        assert word in lines[0], (word, lines[0])
    assert result.stdout == ""   # nothing ran: no report


@pytest.mark.parametrize("args, words", [
    (["--precision", "bf16", "--autocast", "bf16"], ["--precision bf16 and --autocast bf16 together", "give one"]),
    (["--precision", "fp16", "--autocast", "bf16"], ["--precision fp16 and --autocast bf16 together"]),
    (["--precision", "fp32", "--autocast", "fp16"], ["--precision fp32 and --autocast fp16 together"]),
    (["--precision", "fp64"], ["--precision", "fp64"]),
    (["--autocast", "fp32"], ["--autocast", "fp32"]),
    (["--autocast", "int8"], ["--autocast", "int8"]),
])
def test_bad_precision_arguments_are_one_line_errors(args, words):
    assert_one_line_error(run_cli(*args), *words)


def test_run_precision():
    assert run_precision(None, None) == ("fp32", None)
    assert run_precision("bf16", None) == ("bf16", None)
    assert run_precision(None, "fp16") == ("fp32", "fp16")
    with pytest.raises(ArgumentError, match="together"):
        run_precision("bf16", "fp16")
    with pytest.raises(ArgumentError, match="--autocast 'fp32'"):
        run_precision(None, "fp32")


def test_default_tolerance_is_kernelbenchs_for_the_dtype():
    assert default_tolerance("fp32", None) == 1e-4
    assert default_tolerance("fp16", None) == default_tolerance("bf16", None) == 1e-2
    assert default_tolerance("fp32", "bf16") == default_tolerance("fp32", "fp16") == 1e-2


SETTINGS = [   # command line, validate()'s keywords, settings in the JSON, the report's precision line
    ([], {}, {"precision": "fp32", "autocast": None, "atol": 1e-4, "rtol": 1e-4}, "fp32"),
    (["--precision", "bf16"], {"precision": "bf16"}, {"precision": "bf16", "autocast": None, "atol": 1e-2,
                                                      "rtol": 1e-2}, "bf16 (model and inputs moved to bf16)"),
    (["--precision", "fp16", "--atol", "1e-3"], {"precision": "fp16", "atol": 1e-3},
     {"precision": "fp16", "atol": 1e-3, "rtol": 1e-2}, "fp16 (model and inputs moved to fp16)"),
    (["--autocast", "bf16", "--rtol", "0.05"], {"autocast": "bf16", "rtol": 0.05},
     {"precision": "fp32", "autocast": "bf16", "atol": 1e-2, "rtol": 0.05},
     "autocast bf16 (float32 model and inputs, every forward under torch.autocast)"),
]


@pytest.mark.parametrize("args, keywords, settings, words", SETTINGS)
def test_the_json_says_which_precision(tmp_path, args, keywords, settings, words):
    report = tmp_path / "report.json"
    result = run_cli(*args, "--json", report)
    assert result.exit_code == EXIT_NO_CUDA, result.output
    data = json.loads(report.read_text())
    assert {key: data["settings"][key] for key in settings} == settings
    assert data["precision"] == settings["precision"] and data["autocast"] == settings.get("autocast")
    assert data["verdicts"]["kgen"]["precision"] == words


@pytest.mark.parametrize("args, keywords, settings, words", SETTINGS)
def test_the_report_says_which_precision(args, keywords, settings, words):
    out = io.StringIO()
    assert validate(str(GOOD), ref=str(REFERENCE), out=out, **keywords) == EXIT_NO_CUDA
    head = out.getvalue().split("\n\n")[0].splitlines()
    assert f"precision:     {words}" in head
    assert f"atol={settings['atol']:g} rtol={settings['rtol']:g}" in out.getvalue()


def test_validate_refuses_both_before_anything_runs():
    out = io.StringIO()
    with pytest.raises(ArgumentError, match="together"):
        validate(str(GOOD), ref=str(REFERENCE), precision="bf16", autocast="bf16", out=out)
    assert out.getvalue() == ""
