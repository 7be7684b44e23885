"""The `kgen` command line as a user meets it: one-line errors with exit code 2, files written with the usual
mode, a reference found from any folder, stages shown during a long emit; and every source file compiling
without a warning (CPU only: nothing is built)."""
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("path", sorted((ROOT / "kgen").rglob("*.py")) + sorted((ROOT / "generated").iterdir()),
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_every_source_compiles_without_a_warning(path):
    """An invalid escape sequence (`"\\`"`) is a DeprecationWarning on Python 3.11 and a SyntaxWarning on 3.12,
    shown once when the file is first compiled and never again from the cached bytecode: compiled from source
    here, with warnings as errors."""
    source = path.read_text()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        compile(source, str(path), "exec")
