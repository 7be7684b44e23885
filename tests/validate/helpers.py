"""Paths shared by the validator's tests. The solution files under files/ are test DATA (suffix .py.txt,
so nothing collects, imports or lints them as code)."""
from pathlib import Path

import kgen

FILES = Path(__file__).parent / "files"
RUNTIME_FILES = FILES / "runtime"
REFERENCE = Path(kgen.__file__).parent / "specs" / "references" / "level1_35_groupnorm.py"
