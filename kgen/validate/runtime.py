"""The parent's side of the runtime checks: write the child's config, run `python -m kgen.validate.runner`
in its own process group under a time limit (kgen.validate.process), and turn what it left behind -- its
result file, possibly partial, its exit status and its log -- into checks.

How a run ends, and what the report says:
  result file says "done"            the child's checks, as they are
  result file has an error           a broken check of that kind (build, import, cuda, ...), with the
                                     traceback / compiler tail
  timed out                          broken: "timed out after N s (hung kernel?)" + the log's tail; in the
                                     build stage, with a torch that waits on lock files, the build locks
                                     older than the run named instead of the guess
  died (signal, exit status)         broken: how it died, in which stage, + the log's tail
"""
from __future__ import annotations

import importlib.util
import json
import os
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import kgen
from kgen.validate.checks import Check, broken, skipped
from kgen.validate.process import ChildOutcome, run_isolated
from kgen.validate.progress import ProgressWatcher

LOG_TAIL_LINES = 40
KGEN_ROOT = Path(kgen.__file__).resolve().parent.parent


@dataclass
class RuntimeResult:
    checks: list[Check] = field(default_factory=list)
    info: dict = field(default_factory=dict)
    bench: dict | None = None
    kernelbench: dict | None = None   # KernelBench's own protocol (stages/kernelbench.py)
    kernels: dict | None = None       # the profiled kernels (stages/kernels.py)
    ran: bool = True            # False: the runtime checks did not run (no CUDA in the child)
    log_tail: str = ""
    seconds: float = 0.0


def child_environment() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(KGEN_ROOT), env.get("PYTHONPATH", "")) if p)
    env["PYTHONUNBUFFERED"] = "1"
    return env


def run_child(config: dict, timeout: float, progress=None) -> RuntimeResult:
    """Run the runner on `config` (solution, reference, trials, ...; its "result" path is filled in here).
    `progress`: a text stream on which to show the child's stages as they start (kgen.validate.progress)."""
    with tempfile.TemporaryDirectory(prefix="kgen-validate-") as tmp:
        config = {**config, "result": str(Path(tmp) / "result.json"),
                  "solution": str(Path(config["solution"]).resolve()),
                  "reference": str(Path(config["reference"]).resolve())}
        config_path = Path(tmp) / "config.json"
        config_path.write_text(json.dumps(config, indent=1))
        argv = [sys.executable, "-m", "kgen.validate.runner", str(config_path)]
        log_path = Path(tmp) / "child.log"
        watcher = None if progress is None else ProgressWatcher(log_path, progress)
        if watcher is not None:
            watcher.say(f"starting the child process (python, torch; timeout {timeout:g} s)")
        outcome = run_isolated(argv, timeout, env=child_environment(), log_path=log_path,
                               on_poll=None if watcher is None else watcher.poll)
        if watcher is not None:
            watcher.finish()
        return interpret(outcome, read_result(Path(config["result"])), timeout)


def read_result(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def extension_root() -> Path:
    """Where torch.utils.cpp_extension builds: TORCH_EXTENSIONS_DIR, else its per-user cache (found without
    importing torch: ~/.cache/torch_extensions or XDG_CACHE_HOME's)."""
    if os.environ.get("TORCH_EXTENSIONS_DIR"):
        return Path(os.environ["TORCH_EXTENSIONS_DIR"])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "torch_extensions"


def torch_waits_on_lock_files(source: Path | None = None) -> bool:
    """Whether this interpreter's torch locks extension builds with a FileBaton: a lock file whose mere
    existence makes every later build of that extension wait, forever (a build killed earlier leaves it).
    Later versions hold an advisory lock that dies with its holder; their lock files stay and mean nothing.
    Read from torch's source (`source`: its utils/cpp_extension.py, found without importing torch)."""
    if source is None:
        spec = importlib.util.find_spec("torch")
        if spec is None or spec.origin is None:
            return False
        source = Path(spec.origin).parent / "utils" / "cpp_extension.py"
    return source.is_file() and "FileBaton(" in source.read_text(errors="replace")


def stale_lock_hint(child_seconds: float) -> str:
    """For a build that timed out, where torch waits on lock files: the extension build locks older than the
    child, named. "" where there is none."""
    if not torch_waits_on_lock_files():
        return ""
    started = time.time() - child_seconds

    def older(lock: Path) -> bool:   # a lock may go away while we look
        try:
            return lock.stat().st_mtime < started
        except OSError:
            return False

    stale = [lock for pattern in ("*/lock", "*/*/lock") for lock in extension_root().glob(pattern) if older(lock)]
    if not stale:
        return ""
    names = ", ".join(str(lock) for lock in sorted(stale)[:3]) + (" ..." if len(stale) > 3 else "")
    return (f"torch's build lock {names} is older than this run: a build killed earlier leaves it, and later "
            f"builds of that extension wait on it; delete it if no other build is running")


def interpret(outcome: ChildOutcome, result: dict | None, timeout: float) -> RuntimeResult:
    """Checks from the child's (possibly partial) result, plus one broken check if it did not finish."""
    result = result or {}
    out = RuntimeResult(checks=[Check.from_dict(c) for c in result.get("checks", [])],
                        info=result.get("info", {}), bench=result.get("bench"),
                        kernelbench=result.get("kernelbench"), kernels=result.get("kernels"),
                        log_tail=outcome.tail(LOG_TAIL_LINES), seconds=outcome.seconds)
    stage = result.get("stage") or "start-up"
    error = result.get("error")
    if outcome.timed_out:
        hint = stale_lock_hint(outcome.seconds) if stage.startswith("build") else ""
        out.checks.append(broken("runtime", f"timed out after {timeout:g} s ({hint or 'hung kernel?'}) during stage "
                                            f"'{stage}'\n{out.log_tail}", stage=stage, timed_out=True))
    elif error and error.get("kind") == "no-cuda":
        out.ran = False
        out.checks.append(skipped("runtime checks", "RUNTIME CHECKS NOT RUN: no CUDA device in the child process"))
    elif error:
        out.checks.append(broken(error.get("kind", "runtime"),
                                 f"{error.get('summary', '')} [stage '{error.get('stage', stage)}']\n"
                                 f"{error.get('message', '').rstrip()}", **error))
    elif outcome.returncode != 0 or result.get("status") != "done":
        how = f"killed by {outcome.signal_name}" if outcome.signal_name else f"exit status {outcome.returncode}"
        out.checks.append(broken("runtime", f"child process died ({how}) during stage '{stage}'\n{out.log_tail}",
                                 stage=stage, returncode=outcome.returncode))
    return out
