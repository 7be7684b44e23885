"""Build the CUDA extensions of solution files in parallel, once, into TORCH_EXTENSIONS_DIR, so that
later processes (the sanitizer runs, the validator's children, the tests) only load them.

    TORCH_EXTENSIONS_DIR=$PWD/.build/ext python3 benchmarks/prebuild.py [-j N] FILE... [emit:SPEC[:k=v,...]]...

Each FILE (any suffix: the test data is .py.txt) is imported in its own process, which runs its
load_inline; `emit:groupnorm:groups=4` first emits that solution into .build/emitted/ (see emitted_path).
Importing builds nothing but the extension: no model is made and no kernel runs. Exit status 1 if any
import failed (its output's tail is printed).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from kgen.bench import ROOT

EMITTED = ROOT / ".build" / "emitted"

IMPORT = ("import importlib.machinery, importlib.util, sys\n"
          "loader = importlib.machinery.SourceFileLoader('prebuilt_solution', sys.argv[1])\n"
          "spec = importlib.util.spec_from_file_location('prebuilt_solution', sys.argv[1], loader=loader)\n"
          "loader.exec_module(importlib.util.module_from_spec(spec))\n")


def parse_emit(arg: str) -> tuple[str, dict]:
    """`emit:SPEC[:k=v,...]` -> (spec, params); values are ints where they look like ints."""
    parts = arg.split(":")
    params = {}
    if len(parts) > 2 and parts[2]:
        for item in parts[2].split(","):
            key, value = item.split("=", 1)
            params[key] = int(value) if value.lstrip("-").isdigit() else value
    return parts[1], params


def emitted_path(spec: str, params: dict) -> Path:
    suffix = "_".join(f"{k}{v}" for k, v in sorted(params.items()))
    return EMITTED / (spec.replace("-", "_") + (f"_{suffix}" if suffix else "") + ".py")


def emit_to_file(spec: str, params: dict) -> Path:
    from kgen.emit import emit

    path = emitted_path(spec, params)
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")   # atomic: concurrent writers and readers
    temp.write_text(emit(spec, dict(params))[0])
    os.replace(temp, path)
    return path


def build_one(path: Path) -> tuple[Path, int, float, str]:
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", IMPORT, str(path)], cwd=ROOT, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True)
    return path, proc.returncode, time.monotonic() - started, proc.stdout


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("targets", nargs="+")
    parser.add_argument("-j", "--jobs", type=int, default=8, help="files built at once (default 8)")
    args = parser.parse_args()
    paths = [emit_to_file(*parse_emit(t)) if t.startswith("emit:") else Path(t) for t in args.targets]
    started = time.monotonic()
    failed = 0
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for path, code, seconds, output in pool.map(build_one, paths):
            status = "ok" if code == 0 else f"FAILED (exit {code})"
            print(f"prebuild {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}: {status}, "
                  f"{seconds:.1f} s", flush=True)
            if code:
                failed += 1
                print("\n".join(output.rstrip().splitlines()[-30:]), flush=True)
    print(f"prebuild: {len(paths)} files, {failed} failed, {time.monotonic() - started:.1f} s", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
