"""The bench's host time per call (kgen.validate.bench.host_ms): the caller's wall time of calls issued back to back,
which shows a model bound by its Python and launches rather than its kernels (CPU: the work is all host time)."""
import time

import torch

from kgen.validate import bench
from kgen.validate.report import render_bench


class Sleeper(torch.nn.Module):
    """A forward that spends `seconds` on the host, like per-call Python and launches."""

    def __init__(self, seconds: float):
        super().__init__()
        self.seconds = seconds
        self.linear = torch.nn.Linear(4, 4)

    def forward(self, x):
        time.sleep(self.seconds)
        return self.linear(x)


def test_host_time_is_the_callers_time_per_call():
    device = torch.device("cpu")
    slow = bench.host_ms(bench.forward_step(Sleeper(0.004), [torch.rand(2, 4)]), device, calls=5)
    fast = bench.host_ms(bench.forward_step(Sleeper(0.0), [torch.rand(2, 4)]), device, calls=5)
    assert slow >= 4.0 > fast


def test_the_bench_reports_it_for_every_contender(monkeypatch):
    monkeypatch.setattr(bench, "time_compiled", lambda *args: bench.time_contender(*args[:5]))
    result = bench.run_bench(Sleeper(0.002), Sleeper(0.0), lambda: [torch.rand(2, 4)], backward=True,
                             device=torch.device("cpu"), min_run_time=0.001, log=lambda line: None)
    for mode in ("forward", "forward_backward"):
        row = result[mode]
        assert row["eager_host_ms"] >= 2.0 and row["compile_host_ms"] >= 2.0 and row["new_host_ms"] < 2.0
    assert "host ms a call" in render_bench(result)
