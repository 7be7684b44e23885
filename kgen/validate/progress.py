"""Progress of a validation, for people: the child's stages as they start, on a stream of their own
(the CLI gives stderr), so the report on stdout and the JSON stay exactly as they are.

The child (kgen.validate.runner) prints `[kgen-runner] stage: NAME` when a stage starts and
`[kgen-progress] TEXT` for finer steps; its log is a file (kgen.validate.process), which the watcher
reads incrementally each time the parent polls the child. A stage that runs long (the build, mostly)
gets a line every HEARTBEAT_S seconds with the time spent in it so far.

    kgen validate [   0.0 s] environment
    kgen validate [   1.9 s] building and importing the solution
    kgen validate [  11.9 s]   building and importing the solution: 10 s so far
    kgen validate [  64.0 s] trial 1 (rand) forward
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Callable, TextIO

STAGE_PREFIX = "[kgen-runner] stage: "
STEP_PREFIX = "[kgen-progress] "
BENCH_PREFIX = "[kgen-bench] "
HEARTBEAT_S = 10.0
SHOWN = {"build + import solution": "building and importing the solution",
         "fp64": "float64 cross-check", "kernels": "profiling the kernels", "bench": "benchmark"}


class ProgressWatcher:
    """Follows a child's log file and writes a line per stage (and step) to `stream`."""

    def __init__(self, log_path: str | Path, stream: TextIO, clock: Callable[[], float] = time.monotonic,
                 heartbeat: float = HEARTBEAT_S):
        self.path = Path(log_path)
        self.stream = stream
        self.clock = clock
        self.heartbeat = heartbeat
        self.started = clock()
        self.offset = 0
        self.partial = b""
        self.stage: str | None = None
        self.stage_started = self.started
        self.last_line = self.started

    def say(self, text: str) -> None:
        now = self.clock()
        self.stream.write(f"kgen validate [{now - self.started:7.1f} s] {text}\n")
        self.stream.flush()
        self.last_line = now

    def line(self, text: str) -> None:
        if text.startswith(STAGE_PREFIX):
            self.stage = text[len(STAGE_PREFIX):].strip()
            self.stage_started = self.clock()
            self.say(SHOWN.get(self.stage, self.stage))
        elif text.startswith(STEP_PREFIX):
            self.say("  " + text[len(STEP_PREFIX):].strip())
        elif text.startswith(BENCH_PREFIX) and ":" not in text[len(BENCH_PREFIX):]:
            self.say(f"  benchmark: timing {text[len(BENCH_PREFIX):].strip()}")

    def poll(self) -> None:
        try:
            with open(self.path, "rb") as log:
                log.seek(self.offset)
                chunk = log.read()
        except OSError:
            chunk = b""
        if chunk:
            self.offset += len(chunk)
            lines = (self.partial + chunk).split(b"\n")
            self.partial = lines.pop()
            for raw in lines:
                self.line(raw.decode("utf-8", "replace").rstrip("\r"))
        now = self.clock()
        if self.stage is not None and now - self.last_line >= self.heartbeat:
            self.say(f"  {SHOWN.get(self.stage, self.stage)}: {now - self.stage_started:.0f} s so far")

    def finish(self) -> None:
        self.poll()
        if self.partial:
            self.line(self.partial.decode("utf-8", "replace"))
            self.partial = b""
