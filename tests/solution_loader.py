"""Emit a solution into a temporary file and import it as a module (which builds its kernels)."""
from __future__ import annotations

import importlib.util
import os
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from kgen.emit import emit

_LOADED: dict = {}


def load_solution(tmp_dir: Path, spec: str, **params):
    key = (spec, tuple(sorted(params.items())))
    if key not in _LOADED:
        text, _ = emit(spec, params)
        path = Path(tmp_dir) / ("solution_" + "_".join([spec.replace("-", "_")] + [f"{k}{v}" for k, v in sorted(params.items())]) + ".py")
        path.write_text(text)
        _LOADED[key] = import_file(path)
    return _LOADED[key]


def import_file(path: Path):
    name = f"kgen_test_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def build_all(paths) -> None:
    """Builds the extensions of solution files at once, each imported in a child process into TORCH_EXTENSIONS_DIR
    (kgen.bench.prebuild.build_one), so that importing them afterwards only loads them; asserts that each one built."""
    from kgen.bench.prebuild import build_one

    with ThreadPoolExecutor(max(1, min(16, os.cpu_count() or 1))) as pool:
        for path, code, _, output in pool.map(build_one, list(paths)):
            assert code == 0, f"{path.name} did not build:\n{output[-3000:]}"
