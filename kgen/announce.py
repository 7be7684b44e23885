"""The stages of a long command, shown on stderr only once it has run a while.

A small reference emits in about a second and should print nothing but its file; a 300-block model traces for
half a minute, and a silent terminal for that long looks hung. `StageAnnouncer` stays quiet for `after`
seconds; then it shows the stage under way (from a timer thread, so a long first stage is announced while it
runs) and every later stage as it starts.
"""
from __future__ import annotations

import threading

# Seconds of work after which the stages are shown.
ANNOUNCE_AFTER_S = 2.0


class StageAnnouncer:
    """Call it with each stage's description as the stage starts ("tracing ref.py"); use it as a context manager
    around the whole command. Lines are `kgen: <stage> ...` on `stream`."""

    def __init__(self, stream, after: float | None = None):
        self.stream = stream
        self.after = ANNOUNCE_AFTER_S if after is None else after
        self.current: str | None = None
        self.shown = False
        self.lock = threading.Lock()
        self.timer = threading.Timer(self.after, self._late)
        self.timer.daemon = True

    def __enter__(self) -> "StageAnnouncer":
        self.timer.start()
        return self

    def __exit__(self, *exc) -> None:
        self.timer.cancel()
        with self.lock:   # a timer that already fired finishes its line before the command's own output
            self.current = None

    def __call__(self, stage: str) -> None:
        with self.lock:
            self.current = stage
            if self.shown:
                self._write(stage)

    def _late(self) -> None:
        with self.lock:
            self.shown = True
            if self.current is not None:
                self._write(self.current)

    def _write(self, stage: str) -> None:
        self.stream.write(f"kgen: {stage} ...\n")
        self.stream.flush()
