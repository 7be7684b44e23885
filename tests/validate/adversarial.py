"""The validator's adversarial cases, as data shared by the GPU tests (test_runtime_gpu.py) and the
reliability table (kgen/bench/reliability/): every bad solution file under tests/validate/files, how it
is run, and the verdict it must get.

Modes:
  static    static checks only (what `kgen validate` says without CUDA; also what CI checks)
  runtime   the runner child on the pure-PyTorch files of files/runtime/, with device "cuda"
  gpu       the whole `validate(...)` on a real CUDA solution (static checks + child + report)

A case passes when the exit code is the expected one, every `required` pattern matches a failed check,
and every failed check matches a `required` or an `optional` pattern ("*": anything may also fail, e.g.
after a side-stream race). A pattern matches a check name equal to it or ending with " " + pattern.

Leftover processes: a validate() child runs `python -m kgen.validate.runner` in its own session, with
the environment of its parent; `tagged_processes(tag)` finds any process still alive that carries the
KGEN_LEFTOVER_TAG the parent set, so concurrent runs (pytest and the reliability script) do not see
each other's children.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from kgen.validate.checks import EXIT_BROKEN, EXIT_FAIL, EXIT_NO_CUDA, EXIT_PASS
from tests.validate.helpers import FILES, RUNTIME_FILES

TAG_VAR = "KGEN_LEFTOVER_TAG"

# GPU runs: small shapes, 2 trials (as the other GPU tests); the hang gets a short limit, its extension
# being built beforehand (prebuild) so that the limit is spent in the spinning kernel, not in nvcc.
GPU_SETTINGS = {"input_shapes": [[4, 64, 32, 32]], "trials": 2}
GPU_TIMEOUT = 300.0
HANG_TIMEOUT = 30.0
HANG_MARGIN = 30.0
# the runtime files are pure PyTorch: their numerics are under test, not whose kernels run ("kernels": off)
RUNTIME_SETTINGS = {"device": "cuda", "trials": 2, "atol": 1e-4, "rtol": 1e-4, "backward": True, "bench": False,
                    "init_args": [8, 2], "input_shapes": [[3, 8, 5, 6]], "kernels": False}
RUNTIME_TIMEOUT = 180.0
RUNTIME_HANG_TIMEOUT = 20.0


@dataclass
class Case:
    name: str
    path: Path
    mode: str                        # static | runtime | gpu
    exit: int
    required: list = field(default_factory=list)
    optional: list = field(default_factory=list)
    timeout: float = GPU_TIMEOUT
    defect: str = ""

    @property
    def expected(self) -> str:
        return {EXIT_PASS: "PASS", EXIT_FAIL: "FAIL", EXIT_BROKEN: "BROKEN", EXIT_NO_CUDA: "NOT RUN"}[self.exit]


def matches(check_name: str, pattern: str) -> bool:
    return pattern == "*" or check_name == pattern or check_name.endswith(" " + pattern)


def judge(case: Case, code: int, failed: list[str]) -> list[str]:
    """What is wrong with an observed outcome (empty: as expected)."""
    problems = []
    if code != case.exit:
        problems.append(f"exit {code}, expected {case.exit}")
    for pattern in case.required:
        if not any(matches(f, pattern) for f in failed):
            problems.append(f"no failed check matches {pattern!r}")
    allowed = case.required + case.optional
    for name in failed:
        if not any(matches(name, p) for p in allowed):
            problems.append(f"unexpected failure {name!r}")
    return problems


GPU = "gpu_groupnorm"
FP64 = "fp64 (2 of 4 samples)"

GPU_CASES = [
    Case("gpu_groupnorm", FILES / f"{GPU}.py.txt", "gpu", EXIT_PASS, defect="none (hand-written, correct)"),
    Case("gpu_groupnorm_wrong_variance", FILES / f"{GPU}_wrong_variance.py.txt", "gpu", EXIT_FAIL,
         ["trial 1 (rand) forward", "trial 2 (3+2*randn) forward", f"{FP64} forward"],
         defect="variance taken as E[x^2]"),
    Case("gpu_groupnorm_illegal_address", FILES / f"{GPU}_illegal_address.py.txt", "gpu", EXIT_BROKEN,
         [], ["cuda", "runtime", "exception"], defect="out-of-bounds write (illegal memory access)"),
    Case("gpu_groupnorm_hangs", FILES / f"{GPU}_hangs.py.txt", "gpu", EXIT_BROKEN, ["runtime"],
         timeout=HANG_TIMEOUT, defect="kernel spins on a volatile flag for ever (timeout)"),
    Case("gpu_groupnorm_writes_input", FILES / f"{GPU}_writes_input.py.txt", "gpu", EXIT_FAIL,
         ["inputs untouched", "deterministic", "grad input[0]"], ["grad gn.weight", "grad gn.bias"],
         defect="kernel halves its input in place"),
    Case("gpu_groupnorm_caches_output", FILES / f"{GPU}_caches_output.py.txt", "gpu", EXIT_FAIL,
         ["trial 1 (rand) forward", "trial 2 (3+2*randn) forward", "deterministic", "backward", f"{FP64} forward",
          "kernels: forward"], defect="returns its first result on every later call"),
    Case("gpu_groupnorm_wrong_shape", FILES / f"{GPU}_wrong_shape.py.txt", "gpu", EXIT_FAIL,
         ["output shape/dtype/device", f"{FP64} forward"], defect="output lacks the last channel"),
    Case("gpu_build_error", FILES / "gpu_build_error.py.txt", "gpu", EXIT_BROKEN, ["build"],
         defect="nvcc rejects the CUDA source (a real load_inline build error)"),
    Case("gpu_groupnorm_side_stream", FILES / f"{GPU}_side_stream.py.txt", "gpu", EXIT_FAIL,
         ["no extra CUDA streams"], ["*"], defect="kernel launched on a side stream (rejected statically)"),
]

# Static verdicts of the GPU files (what CI without a GPU checks): only the side stream is rejected.
GPU_STATIC_FAILURES = {case.name: (["no extra CUDA streams"] if case.name.endswith("side_stream") else [])
                       for case in GPU_CASES}


def static_cases() -> list[Case]:
    """Every file the static tests reject, with the exit code validate() gives without CUDA; plus the
    GPU files (static verdicts only)."""
    from tests.validate.test_validate_static import EXPECTED

    cases = [Case(name, FILES / f"{name}.py.txt", "static", EXIT_BROKEN if broken else EXIT_FAIL, [check],
                  defect=f"rule: {check}") for name, (check, broken) in sorted(EXPECTED.items())]
    cases.append(Case("good", FILES / "good.py.txt", "static", EXIT_NO_CUDA, defect="none (no CUDA: not run)"))
    for case in GPU_CASES:
        failures = GPU_STATIC_FAILURES[case.name]
        cases.append(Case(case.name, case.path, "static", EXIT_FAIL if failures else EXIT_NO_CUDA, failures,
                          defect=case.defect))
    return cases


def runtime_cases() -> list[Case]:
    """The pure-PyTorch runtime files (the CPU table), run on "cuda"; plus the hanging one."""
    from tests.validate.test_validate_runtime_cpu import EXPECTED

    cases = [Case(name, RUNTIME_FILES / f"{name}.py.txt", "runtime", code, list(patterns),
                  timeout=RUNTIME_TIMEOUT) for name, (code, patterns) in sorted(EXPECTED.items())]
    cases.append(Case("hangs", RUNTIME_FILES / "hangs.py.txt", "runtime", EXIT_BROKEN, ["runtime"],
                      timeout=RUNTIME_HANG_TIMEOUT, defect="forward sleeps for ever (timeout)"))
    return cases


def all_cases() -> list[Case]:
    return static_cases() + runtime_cases() + GPU_CASES


# ---- leftover processes ---------------------------------------------------------------------------------

def tagged_processes(tag: str) -> list[tuple[int, str]]:
    """(pid, command line) of every live process (not a zombie) other than this one whose environment has
    KGEN_LEFTOVER_TAG=tag, or whose command line names the validator's runner and the tag."""
    found = []
    needle = f"{TAG_VAR}={tag}".encode()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            if not cmdline:                                          # a zombie or a kernel thread
                continue
            environ = Path(f"/proc/{entry}/environ").read_bytes()
        except OSError:
            continue
        if needle in environ.split(b"\0"):
            found.append((int(entry), cmdline.replace(b"\0", b" ").decode(errors="replace").strip()))
    return found


def runner_processes() -> list[tuple[int, str]]:
    """Every live `kgen.validate.runner` process or one whose command line names a validate temp
    directory (kgen-validate-*), whoever started it."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if "kgen.validate.runner" in cmdline or "kgen-validate-" in cmdline:
            found.append((int(entry), cmdline.strip()))
    return found


class Tagged:
    """`with Tagged("name") as tag:` sets KGEN_LEFTOVER_TAG for the children started inside."""

    def __init__(self, name: str):
        self.tag = f"{os.getpid()}-{name}"

    def __enter__(self) -> str:
        self.saved = os.environ.get(TAG_VAR)
        os.environ[TAG_VAR] = self.tag
        return self.tag

    def __exit__(self, *exc) -> None:
        if self.saved is None:
            os.environ.pop(TAG_VAR, None)
        else:
            os.environ[TAG_VAR] = self.saved


# ---- running a case -------------------------------------------------------------------------------------

@dataclass
class Outcome:
    code: int
    failed: list
    seconds: float
    leftovers: list
    detail: str = ""          # the first failed check's detail, first line (or the report's result)
    checks: list = field(default_factory=list)


def load_in_process(path: Path) -> None:
    """Import a solution file here (building its extension if need be, running nothing), so that a
    validate() child only loads the build and a short timeout is spent running, not compiling."""
    from kgen.validate.runner import import_file

    import_file(path, "kgen_prebuilt_" + path.name.replace(".", "_"))


def run_case(case: Case, reference: Path | None = None) -> Outcome:
    import io
    import json
    import tempfile
    import time

    from kgen.validate import validate
    from kgen.validate.checks import exit_code, skipped
    from kgen.validate.runtime import run_child
    from kgen.validate.static import static_checks
    from tests.validate.helpers import REFERENCE

    reference = reference or REFERENCE
    if case.mode == "gpu" and case.timeout < GPU_TIMEOUT:   # the hang: its short limit is for running
        load_in_process(case.path)
    with Tagged(case.name) as tag:
        started = time.monotonic()
        if case.mode == "static":
            checks = static_checks(case.path.read_text(), reference.read_text())
            checks.append(skipped("runtime checks", "not run (static verdict)"))
            code = exit_code(checks, runtime_ran=False)
            checks = [c.to_dict() for c in checks]
        elif case.mode == "runtime":
            config = {**RUNTIME_SETTINGS, "solution": str(case.path), "reference": str(reference)}
            result = run_child(config, case.timeout)
            code = exit_code(result.checks, result.ran)
            checks = [c.to_dict() for c in result.checks]
        else:
            with tempfile.TemporaryDirectory(prefix="kgen-adversarial-") as tmp:
                report = Path(tmp) / "report.json"
                out = io.StringIO()
                code = validate(str(case.path), ref=str(reference), json_path=report, out=out, timeout=case.timeout,
                                **GPU_SETTINGS)
                checks = json.loads(report.read_text())["checks"]
        seconds = time.monotonic() - started
        leftovers = tagged_processes(tag)
        deadline = time.monotonic() + 3.0
        while leftovers and time.monotonic() < deadline:   # a killed grandchild may take a moment to go
            time.sleep(0.1)
            leftovers = tagged_processes(tag)
    failed = [c["name"] for c in checks if c["ok"] is False]
    first = next((c for c in checks if c["ok"] is False), None)
    detail = "" if first is None else f"{first['name']}: {first['detail'].strip().splitlines()[0] if first['detail'].strip() else ''}"
    return Outcome(code, failed, seconds, leftovers, detail[:200], checks)
