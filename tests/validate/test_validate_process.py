"""The child-process machinery, without a GPU: time limit, killing the whole process group (no process
left behind), deaths by signal, how each ending becomes a check and an exit code, and a build timeout's
report naming a stale build lock."""
import os
import sys
import time
from pathlib import Path

from kgen.validate import runtime
from kgen.validate.checks import EXIT_BROKEN, EXIT_FAIL, EXIT_PASS, exit_code
from kgen.validate.process import ChildOutcome, run_isolated
from kgen.validate.runtime import interpret

SLEEPER = """
import subprocess, sys, time
from pathlib import Path
grandchild = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
Path(sys.argv[1]).write_text(f"{{__import__('os').getpid()}} {{grandchild.pid}}")
print("sleeping", flush=True)
time.sleep(120)
"""


def alive(pid: int) -> bool:
    """True while the process exists and is not a zombie."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state not in ("Z", "X")


def test_timeout_kills_the_whole_group_and_reports_exit_2(tmp_path):
    pids_file = tmp_path / "pids"
    script = tmp_path / "sleeper.py"
    script.write_text(SLEEPER.format())
    started = time.monotonic()
    outcome = run_isolated([sys.executable, str(script), str(pids_file)], timeout=2)
    assert time.monotonic() - started < 30
    assert outcome.timed_out and outcome.returncode is None
    assert "sleeping" in outcome.log
    result = interpret(outcome, None, timeout=2)
    assert exit_code(result.checks, True) == EXIT_BROKEN
    assert "timed out after 2 s" in result.checks[-1].detail
    pids = [int(p) for p in pids_file.read_text().split()]
    deadline = time.monotonic() + 5
    while any(alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(alive(p) for p in pids), "a process of the group survived"


def test_grandchildren_are_killed_after_a_normal_exit(tmp_path):
    pid_file = tmp_path / "pid"
    code = (f"import subprocess, sys; p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)']);"
            f" open({str(pid_file)!r}, 'w').write(str(p.pid))")
    outcome = run_isolated([sys.executable, "-c", code], timeout=30)
    assert outcome.returncode == 0 and not outcome.timed_out
    pid = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(pid)


def test_death_by_signal_is_broken_with_the_signal_name():
    outcome = run_isolated([sys.executable, "-c", "import os; print('boom', flush=True); os.abort()"], timeout=30)
    assert outcome.signal_name == "SIGABRT"
    partial = {"status": "running", "stage": "trial 1 (rand) forward", "checks": [], "info": {}}
    result = interpret(outcome, partial, timeout=30)
    check = result.checks[-1]
    assert check.broken and "SIGABRT" in check.detail and "trial 1 (rand) forward" in check.detail
    assert "boom" in check.detail


def test_output_is_captured_and_exit_status_reported():
    outcome = run_isolated([sys.executable, "-c", "import sys; print('out'); print('err', file=sys.stderr); sys.exit(3)"],
                           timeout=30)
    assert outcome.returncode == 3 and "out" in outcome.log and "err" in outcome.log
    result = interpret(outcome, None, timeout=30)
    assert "exit status 3" in result.checks[-1].detail


def fake(returncode=0):
    return ChildOutcome(returncode=returncode, timed_out=False, seconds=1.0, log="log line\n")


def test_interpret_keeps_partial_checks_and_the_recorded_error():
    check = {"name": "trial 1 (rand) forward", "ok": True, "detail": "max|Δ| 1e-07", "data": {}}
    result = {"status": "running", "stage": "build + import solution", "checks": [check], "info": {"gpu": "H100"},
              "error": {"kind": "build", "stage": "build + import solution", "summary": "build failed: x.cu(3): error: y",
                        "message": "compiler errors:\nx.cu(3): error: y"}}
    out = interpret(fake(2), result, timeout=900)
    assert [c.name for c in out.checks] == ["trial 1 (rand) forward", "build"]
    assert out.checks[-1].broken and out.checks[-1].detail.startswith("build failed: x.cu(3): error: y")
    assert out.info == {"gpu": "H100"}
    assert exit_code(out.checks, True) == EXIT_BROKEN


def test_interpret_done_results():
    passed = {"name": "a", "ok": True, "detail": "", "data": {}}
    failed = {"name": "b", "ok": False, "detail": "max|Δ| 1", "data": {}}
    done = {"status": "done", "stage": "fp64", "checks": [passed], "info": {}}
    assert exit_code(interpret(fake(), done, 900).checks, True) == EXIT_PASS
    done["checks"].append(failed)
    assert exit_code(interpret(fake(), done, 900).checks, True) == EXIT_FAIL


def test_no_cuda_in_the_child_means_not_run():
    result = {"status": "running", "stage": "environment", "checks": [], "info": {},
              "error": {"kind": "no-cuda", "stage": "environment", "summary": "", "message": "no CUDA"}}
    out = interpret(fake(2), result, 900)
    assert out.ran is False and exit_code(out.checks, out.ran) == 3


def _old_lock(root: Path, name: str, age: float) -> Path:
    lock = root / "py312_cu130" / name / "lock"
    lock.parent.mkdir(parents=True)
    lock.write_text("")
    then = time.time() - age
    os.utime(lock, (then, then))
    return lock


def test_a_build_timeout_names_a_lock_older_than_the_run(tmp_path, monkeypatch):
    """torch versions that wait on a lock file's existence hang on one a killed build left: the timeout's
    report names it; a lock of a build running now (newer than the child) is not named."""
    stale = _old_lock(tmp_path, "kgen_ref_0123", age=3600)
    _old_lock(tmp_path, "kgen_ref_4567", age=1)
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path))
    monkeypatch.setattr(runtime, "torch_waits_on_lock_files", lambda: True)
    timed_out = ChildOutcome(returncode=None, timed_out=True, seconds=600.0, log="building\n")
    partial = {"status": "running", "stage": "build + import solution", "checks": [], "info": {}}
    detail = interpret(timed_out, partial, timeout=600).checks[-1].detail
    assert str(stale) in detail and "kgen_ref_4567" not in detail and "hung kernel" not in detail
    later = {"status": "running", "stage": "trial 1 (rand) forward", "checks": [], "info": {}}
    assert "hung kernel?" in interpret(timed_out, later, timeout=600).checks[-1].detail   # not a build stage
    monkeypatch.setattr(runtime, "torch_waits_on_lock_files", lambda: False)
    assert "hung kernel?" in interpret(timed_out, partial, timeout=600).checks[-1].detail  # advisory locks


def test_which_torch_waits_on_lock_files(tmp_path):
    """Read from torch's cpp_extension source: FileBaton (a lock file's existence) or not; this torch's own
    source is found and read."""
    source = tmp_path / "cpp_extension.py"
    source.write_text("baton = FileBaton(os.path.join(build_directory, 'lock'))\n")
    assert runtime.torch_waits_on_lock_files(source)
    source.write_text("with FileLock(os.path.join(build_directory, 'lock')):\n")
    assert not runtime.torch_waits_on_lock_files(source)
    assert not runtime.torch_waits_on_lock_files(tmp_path / "missing.py")
    assert isinstance(runtime.torch_waits_on_lock_files(), bool)
