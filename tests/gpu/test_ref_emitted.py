"""`kgen emit --ref` end to end on our own references (tests/ref/references): emit, then `kgen validate`
(outputs and every gradient against the reference and float64, determinism, state_dict), and a second
shape through --init-args/--input-shape where the reference allows it. Needs a CUDA device."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parent.parent.parent
OWN = sorted((ROOT / "tests" / "ref" / "references").glob("*.py"))
OTHER_SHAPES = {
    "conv1d_gn_noaffine_relu": (["[3, 16, 4, 4]"], ["[2, 3, 50]"]),
    "two_groupnorms": (["[24, 64, 8, 16]"], ["[5, 24]"]),
    "gn_channel_max_lse": (["[2, 5]"], ["[1, 2, 9, 13]"]),
}


def emit(reference: Path, out: Path) -> None:
    result = subprocess.run([sys.executable, "-m", "kgen.cli", "emit", "--ref", str(reference), "-o", str(out)],
                            capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stderr


def validate(solution: Path, *extra) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kgen.cli", "validate", str(solution), "--trials", "2", *extra],
                          capture_output=True, text=True, cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)))


@pytest.mark.parametrize("reference", OWN, ids=lambda p: p.stem)
def test_emitted_solution_validates(reference, tmp_path):
    solution = tmp_path / f"{reference.stem}_solution.py"
    emit(reference, solution)
    result = validate(solution, "--json", str(tmp_path / "report.json"))
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-3000:]
    extra = OTHER_SHAPES.get(reference.stem)
    if extra:
        init_args, shapes = extra
        args = ["--init-args", init_args[0]] + [a for s in shapes for a in ("--input-shape", s)]
        result = validate(solution, *args)
        assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-3000:]
