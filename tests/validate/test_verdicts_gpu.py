"""The validator's verdicts on a GPU:
  determinism    a reference whose own library call (index_add_ on float atomics) is not bitwise reproducible:
                 a solution sharing that call passes (the reference's nondeterminism is INFO); one whose own
                 kernel uses float atomics fails on determinism and on nothing else
  progress       the CLI's progress on stderr, the report on stdout (L2-19 at an odd shape, which must exit 0)
  KernelBench    a third-party-style solution: KernelBench's verdict PASS, kgen's FAIL (gradients, state_dict)
  kernels        a kernel compiled but never launched fails with the kernel listing; every generated file
                 passes with its own kernels doing the work
Set KGEN_REPORT_DIR to keep each report (text and JSON) there."""
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kgen.golden import GENERATED
from kgen.validate import EXIT_FAIL, EXIT_PASS, validate
from tests.validate.helpers import FILES, REFERENCE

pytestmark = pytest.mark.gpu

INDEX_REFERENCE = FILES / "reference_index_add.py.txt"
SMALL = {"input_shapes": [[4, 64, 32, 32]], "trials": 2}
REFERENCES = Path(__file__).resolve().parents[2] / "kgen" / "specs" / "references"
TIMEOUT = 600


def keep(name: str, text: str, data: dict | None = None) -> None:
    folder = os.environ.get("KGEN_REPORT_DIR")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        (Path(folder) / f"{name}.txt").write_text(text)
        if data is not None:
            (Path(folder) / f"{name}.json").write_text(json.dumps(data, indent=1))


def run(path, ref, tmp_path, **kwargs):
    out = io.StringIO()
    report = tmp_path / "report.json"
    code = validate(str(path), ref=None if ref is None else str(ref), json_path=report, out=out, timeout=TIMEOUT,
                    **kwargs)
    text, data = out.getvalue(), json.loads(report.read_text())
    print(text)
    keep(Path(path).name.split(".")[0], text, data)
    return code, data, text


def failed(data):
    return [c["name"] for c in data["checks"] if c["verdict"] == "FAIL"]


def check(data, name):
    return next(c for c in data["checks"] if c["name"] == name)


# ---- determinism ----------------------------------------------------------------------------------------------

def test_solution_sharing_the_references_nondeterministic_index_add_passes(tmp_path):
    code, data, text = run(FILES / "gpu_index_add_shared_library.py.txt", INDEX_REFERENCE, tmp_path, trials=2)
    assert code == EXIT_PASS, failed(data)
    det = [c for c in data["checks"] if c["name"].endswith(" deterministic")]
    assert len(det) == 2 and all(c["verdict"] == "PASS" for c in det)
    # the library's atomics made the default round differ; deterministic algorithms made both reproducible
    assert any(len(c["data"]["rounds"]) > 1 for c in det), [c["detail"] for c in det]
    info = [c for c in data["checks"] if c["name"].endswith(" reference determinism")]
    assert info and all(c["verdict"] == "INFO" for c in info)
    assert "not bitwise reproducible" in info[0]["detail"]
    assert check(data, "kernels: forward")["verdict"] == "PASS"
    assert "scale_kernel" in data["kernels"]["forward"]["solution_kernels"]
    assert data["verdicts"]["kernelbench"]["verdict"] == "PASS"


def test_own_float_atomics_fail_determinism_against_a_nondeterministic_reference(tmp_path):
    code, data, _ = run(FILES / "gpu_index_add_own_atomics.py.txt", INDEX_REFERENCE, tmp_path, trials=2)
    assert code == EXIT_FAIL
    assert failed(data) == ["trial 1 (rand) deterministic", "trial 2 (3+2*randn) deterministic"]
    assert "own kernels are nondeterministic" in check(data, "trial 1 (rand) deterministic")["detail"]
    assert set(data["kernels"]["forward"]["solution_kernels"]) == {"atomic_bin_sum_kernel", "scale_kernel"}


# ---- KernelBench's verdict apart from kgen's ------------------------------------------------------------------

def test_third_party_solution_kernelbench_pass_kgen_fail(tmp_path):
    code, data, text = run(FILES / "third_party_groupnorm.py.txt", REFERENCE, tmp_path, **SMALL)
    assert code == EXIT_FAIL
    assert check(data, "defines get_inputs, get_init_inputs")["verdict"] == "INFO"
    kb, kg = data["verdicts"]["kernelbench"], data["verdicts"]["kgen"]
    assert kb["verdict"] == "PASS", kb
    assert kg["verdict"] == "FAIL" and set(kg["failed"]) == {"state_dict", "gradients"}, kg
    assert "KernelBench verdict: PASS (forward only, atol=rtol=1e-4: 5 of 5 trials correct" in text
    assert "kgen verdict:        FAIL (state_dict: " in text and "gradients: trial 1 (rand) backward" in text
    assert check(data, "kernels: forward")["verdict"] == "PASS"
    assert data["kernels"]["forward"]["solution_kernels"] == ["groupnorm_forward_kernel"]
    assert check(data, "kernels: backward")["verdict"] == "SKIP"


# ---- the solution's own kernels at work -----------------------------------------------------------------------

def test_kernel_compiled_but_never_launched_fails_with_the_listing(tmp_path):
    code, data, text = run(FILES / "gpu_groupnorm_never_launched.py.txt", REFERENCE, tmp_path, **SMALL)
    assert code == EXIT_FAIL
    assert failed(data) == ["kernels: forward"]
    forward = check(data, "kernels: forward")
    assert "none of the solution's kernels" in forward["detail"] and "at::native::" in forward["detail"]
    assert data["kernels"]["forward"]["solution_launches"] == 0 and data["kernels"]["forward"]["launches"] > 0
    assert "third_party_groupnorm" in " ".join(data["kernels"]["libraries"])   # its extension was found
    assert "kernels (torch.profiler" in text and "    torch    at::native::" in text
    assert data["verdicts"]["kernelbench"]["verdict"] == "PASS"                # KernelBench cannot tell
    assert data["verdicts"]["kgen"]["failed"] == {"kernels": ["kernels: forward"]}


GENERATED_RUNS = {
    "groupnorm.py": {"input_shapes": [[4, 64, 64, 64]]},
    "convt_gelu_groupnorm.py": {"input_shapes": [[4, 64, 32, 32]]},
    "convt_gelu_groupnorm_fast.py": {"input_shapes": [[4, 64, 32, 32]], "atol": 1e-2, "rtol": 1e-2},
    "convt_gelu_groupnorm_tanh.py": {"input_shapes": [[4, 64, 32, 32]],
                                     "ref": REFERENCES / "level2_19_convtranspose2d_gelu_tanh_groupnorm.py"},
    "conv_gn_tanh_hardswish_res_lse.py": {"input_shapes": [[4, 8, 32, 32]]},
}


# At these small shapes the float64 cross-check of two samples fails two variants on their TF32 conv gradients
# (H100): the channels-last TF32 weight gradient is itself far from float64 at small shapes (README, --conv fast),
# and the tanh variant's conv weight gradient is just over its bound (0.00916 vs 0.00908). The README's runs pass
# both at their reference shapes. Nothing else may fail.
FLOAT64_AT_SMALL_SHAPES = {"convt_gelu_groupnorm_fast.py", "convt_gelu_groupnorm_tanh.py"}
# --conv fast holds at 1e-2, not at KernelBench's fixed 1e-4 (TF32 NHWC conv): on the H100 its KernelBench
# verdict is FAIL, 4 of 5 trials, max|Δ| 1.4e-4 -- the verdict KernelBench itself would give
KERNELBENCH_TOLERANCE_TOO_TIGHT = {"convt_gelu_groupnorm_fast.py"}


@pytest.mark.parametrize("name", sorted(GENERATED_RUNS))
def test_generated_file_passes_with_its_own_kernels_at_work(name, tmp_path):
    settings = dict(GENERATED_RUNS[name])
    ref = settings.pop("ref", None)
    code, data, _ = run(GENERATED / name, ref, tmp_path, trials=2, **settings)
    if name in FLOAT64_AT_SMALL_SHAPES:
        assert set(data["verdicts"]["kgen"]["failed"]) <= {"float64"}, failed(data)
        assert all(" grad " in f for f in failed(data)), failed(data)
    else:
        assert code == EXIT_PASS, failed(data)
        assert data["verdicts"]["kgen"]["verdict"] == "PASS"
    kernelbench = data["verdicts"]["kernelbench"]
    if name in KERNELBENCH_TOLERANCE_TOO_TIGHT:
        assert kernelbench["verdict"] == "PASS" or "output mismatch" in kernelbench["summary"], kernelbench
    else:
        assert kernelbench["verdict"] == "PASS", kernelbench
    assert all(c["verdict"] == "PASS" for c in data["checks"] if c["name"].endswith(" deterministic"))
    for phase in ("forward", "backward"):
        assert check(data, f"kernels: {phase}")["verdict"] == "PASS"
        kernels = data["kernels"][phase]["solution_kernels"]
        assert kernels and all(k.startswith("kgen::") for k in kernels), kernels


# ---- determinism and progress through the command line: L2-19 at an odd shape ---------------------------------

def test_cli_l2_19_at_an_odd_shape_exits_0_with_progress_on_stderr(tmp_path):
    report = tmp_path / "report.json"
    argv = [sys.executable, "-m", "kgen.cli", "validate", str(GENERATED / "convt_gelu_groupnorm.py"),
            "--init-args", "[16, 48, 5, 3, 4, 6]", "--input-shape", "[3, 16, 21, 19]", "--json", str(report)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT)
    keep("cli_convt_gelu_groupnorm_odd_shape", done.stdout + "\n---- stderr ----\n" + done.stderr)
    print(done.stdout, done.stderr)
    data = json.loads(report.read_text())
    assert done.returncode == 0, failed(data)
    assert "RESULT: PASS" in done.stdout and "KernelBench verdict: PASS" in done.stdout
    assert "kgen validate [" not in done.stdout
    progress = [line for line in done.stderr.splitlines() if line.startswith("kgen validate [")]
    shown = [line.split("] ", 1)[1] for line in progress]
    for stage in ("building and importing the solution", "trial 1 (rand) forward", "float64 cross-check",
                  "profiling the kernels"):
        assert stage in shown, shown
