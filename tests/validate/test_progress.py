"""`kgen validate` shows its stages on stderr as they start (a line every ~10 s while a
stage such as the build runs long), without changing the report on stdout or the JSON."""
import io
import json
import re

from kgen.validate import validate
from kgen.validate.progress import ProgressWatcher
from tests.validate.helpers import REFERENCE, RUNTIME_FILES


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_watcher_shows_stages_steps_and_a_heartbeat_while_a_stage_runs_long(tmp_path):
    log = tmp_path / "child.log"
    log.write_text("")
    clock, out = Clock(), io.StringIO()
    watcher = ProgressWatcher(log, out, clock=clock, heartbeat=10.0)
    with open(log, "a") as child:
        child.write("[kgen-runner] stage: environment\nnoise from torch\n[kgen-runner] stage: build + imp")
        child.flush()
        clock.now += 0.5
        watcher.poll()
        assert out.getvalue().splitlines() == ["kgen validate [    0.5 s] environment"]   # the partial line waits
        child.write("ort solution\n")
        child.flush()
        clock.now += 0.5
        watcher.poll()
        for _ in range(25):                  # 25 s of building: a line at 10 s and at 20 s, not more
            clock.now += 1.0
            watcher.poll()
        child.write("[kgen-runner] stage: trial 1 (rand) forward\n[kgen-progress] trial 1 (rand): two calls differ\n"
                    "[kgen-bench] eager\n[kgen-bench] eager: {'forward': {'ms': 1.0}}\n")
        child.flush()
        watcher.finish()
    assert out.getvalue().splitlines() == [
        "kgen validate [    0.5 s] environment",
        "kgen validate [    1.0 s] building and importing the solution",
        "kgen validate [   11.0 s]   building and importing the solution: 10 s so far",
        "kgen validate [   21.0 s]   building and importing the solution: 20 s so far",
        "kgen validate [   26.0 s] trial 1 (rand) forward",
        "kgen validate [   26.0 s]   trial 1 (rand): two calls differ",
        "kgen validate [   26.0 s]   benchmark: timing eager",
    ]


def test_watcher_is_quiet_before_the_child_writes_anything(tmp_path):
    clock, out = Clock(), io.StringIO()
    watcher = ProgressWatcher(tmp_path / "absent.log", out, clock=clock)
    clock.now += 30
    watcher.poll()
    watcher.finish()
    assert out.getvalue() == ""


def _run(monkeypatch, tmp_path, progress):
    monkeypatch.setattr("kgen.validate.core.cuda_available", lambda: True)
    monkeypatch.setattr("kgen.validate.core.RUNTIME_DEVICE", "cpu")
    out, report = io.StringIO(), tmp_path / f"report-{progress is not None}.json"
    code = validate(str(RUNTIME_FILES / "ok.py.txt"), ref=str(REFERENCE), trials=2, init_args=[8, 2],
                    input_shapes=[[3, 8, 5, 6]], out=out, json_path=report, progress=progress)
    return code, out.getvalue(), json.loads(report.read_text())


def _timeless(text: str) -> str:
    return re.sub(r"\d+\.\d+ s", "_ s", text)


def test_progress_goes_to_its_own_stream_and_changes_neither_report_nor_json(monkeypatch, tmp_path):
    stream = io.StringIO()
    code, text, data = _run(monkeypatch, tmp_path, stream)
    quiet_code, quiet_text, quiet_data = _run(monkeypatch, tmp_path, None)
    assert code == quiet_code
    assert _timeless(text) == _timeless(quiet_text)
    strip = lambda d: [(c["name"], c["verdict"]) for c in d["checks"]]   # noqa: E731
    assert strip(data) == strip(quiet_data) and set(data) == set(quiet_data)
    lines = stream.getvalue().splitlines()
    assert all(line.startswith("kgen validate [") for line in lines)
    shown = [line.split("] ", 1)[1] for line in lines]
    assert shown[0].startswith("starting the child process")      # at once, before python and torch load
    order = ["environment", "building and importing the solution", "KernelBench protocol",
             "trial 1 (rand) forward", "trial 1 (rand) backward", "trial 2 (3+2*randn) forward",
             "float64 cross-check", "profiling the kernels"]
    assert [s for s in shown if s in order] == order
    assert "kgen validate [" not in text                              # nothing of it on stdout
