"""How `kgen tune` measures its candidates on the GPU, each stage in child processes (a candidate that crashes or
hangs costs its own process, never the tune): build every candidate's extension in parallel (`kgen.bench.prebuild`),
`kgen validate` each built one (outputs and every gradient against the reference, float64 arbitration), then time
the passing ones in one process (`kgen.tune.timing`). `GpuRunner` is that; the tests give `tune` another runner.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from kgen.bench.prebuild import build_one


class GpuRunner:
    """The real stages, on this machine's GPU."""

    def __init__(self, reference: str, precision: str = "fp32", init_args: list | None = None, jobs: int | None = None,
                 timeout: float = 900.0, log=lambda line: None):
        self.reference, self.precision, self.timeout, self.log = reference, precision, timeout, log
        self.init_args = init_args   # Model's arguments where not the reference's get_init_inputs() (a preset's)
        self.jobs = jobs or max(1, min(8, os.cpu_count() or 1))
        self.validate_jobs = 3        # kgen validate children at once: each mostly host work between short kernels

    def gpu(self) -> str:
        import torch
        return torch.cuda.get_device_name() if torch.cuda.is_available() else ""

    def build(self, paths: list[Path]) -> dict[Path, str]:
        """{path: "" where it built, else the build's last lines}."""
        def one(path: Path) -> tuple[Path, str]:
            _, code, seconds, tail = build_one(path)
            self.log(f"built {path.name} in {seconds:.0f} s" if code == 0 else f"{path.name} did not build")
            return path, "" if code == 0 else "\n".join(tail.strip().splitlines()[-5:]) or f"exit code {code}"
        with ThreadPoolExecutor(self.jobs) as pool:
            return dict(pool.map(one, paths))

    def validate(self, path: Path) -> dict:
        """{"result": "PASS" | "FAIL" | ..., "exit_code": n, "summary": one line}."""
        with tempfile.TemporaryDirectory() as folder:
            report = Path(folder) / "validate.json"
            command = [sys.executable, "-m", "kgen.cli", "validate", str(path), "--ref", self.reference,
                       "--trials", "2", "--quiet", "--json", str(report), "--timeout", str(self.timeout)]
            if self.precision != "fp32":
                command += ["--precision", self.precision]
            if self.init_args is not None:
                command += ["--init-args", json.dumps(self.init_args)]
            done = subprocess.run(command, capture_output=True, text=True)
            if not report.is_file():
                lines = (done.stdout + done.stderr).strip().splitlines()
                return {"result": "BROKEN", "exit_code": done.returncode, "summary": lines[-1] if lines else ""}
            data = json.loads(report.read_text())
        kgen = data.get("verdicts", {}).get("kgen", {})
        return {"result": data.get("result", "?"), "exit_code": done.returncode, "summary": kgen.get("summary", "")}

    def time(self, paths: list[Path]) -> dict:
        """kgen.tune.timing's JSON for `paths` (in that order), or {"error": ...}."""
        with tempfile.TemporaryDirectory() as folder:
            out = Path(folder) / "timing.json"
            command = [sys.executable, "-m", "kgen.tune.timing", self.reference, *map(str, paths), "--json",
                       str(out), "--precision", self.precision]
            if self.init_args is not None:
                command += ["--init-args", json.dumps(self.init_args)]
            done = subprocess.run(command, stdout=subprocess.PIPE, stderr=None, text=True)
            if done.returncode != 0 or not out.is_file():
                return {"error": f"the timing process exited with {done.returncode}"}
            return json.loads(out.read_text())
