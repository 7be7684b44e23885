"""Running a command in a child process that cannot outlive its welcome.

The child gets its own session (and so its own process group, which everything it starts joins: the
ninja/nvcc build, a stray worker). Its stdout and stderr go, interleaved, to a log file rather than a
pipe, so nothing it leaves behind can keep us waiting on a pipe. On timeout the whole group is killed;
after a normal exit the group is killed too, so no grandchild survives. The child is not reaped until
its group has been killed, which keeps its pid (the group id) from being reused in between.
"""
from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

POLL_S = 0.05


@dataclass
class ChildOutcome:
    returncode: int | None     # None if it timed out; negative: killed by that signal
    timed_out: bool
    seconds: float
    log: str                   # stdout and stderr, interleaved

    @property
    def signal_name(self) -> str | None:
        if self.returncode is None or self.returncode >= 0:
            return None
        try:
            return signal.Signals(-self.returncode).name
        except ValueError:
            return f"signal {-self.returncode}"

    def tail(self, lines: int = 40) -> str:
        return "\n".join(self.log.rstrip().splitlines()[-lines:])


def _exited(pid: int) -> bool:
    """Whether the child has exited, without reaping it."""
    return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        return


def run_isolated(argv: list[str], timeout: float, env: dict | None = None, cwd: str | Path | None = None,
                 log_path: str | Path | None = None, on_poll: Callable[[], None] | None = None) -> ChildOutcome:
    """Run argv in a new session with a wall-clock limit; return how it ended and what it printed.
    `on_poll` is called every poll while the child runs (e.g. to follow its log)."""
    own_log = log_path is None
    if own_log:
        handle, log_path = tempfile.mkstemp(prefix="kgen-child-", suffix=".log")
        os.close(handle)
    log_path = Path(log_path)
    started = time.monotonic()
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True, env=env, cwd=cwd)
    timed_out = False
    try:
        deadline = started + timeout
        while not _exited(proc.pid):
            if time.monotonic() >= deadline:
                timed_out = True
                break
            if on_poll is not None:
                on_poll()
            time.sleep(POLL_S)
    finally:
        _kill_group(proc.pid)   # the child is not reaped yet, so this group id is still ours
        returncode = proc.wait()
    seconds = time.monotonic() - started
    text = log_path.read_text(errors="replace")
    if own_log:
        log_path.unlink(missing_ok=True)
    return ChildOutcome(None if timed_out else returncode, timed_out, seconds, text)
