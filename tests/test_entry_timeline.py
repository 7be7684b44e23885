"""kgen.bench.entry_timeline on the CPU: the interval arithmetic that splits an entry point's host time into the calls
recorded inside it and its own, and main() end to end on a stub solution (CUDA calls stubbed)."""
import json

import torch

from kgen.bench.entry_timeline import Span, outermost, timeline


def test_outermost_drops_what_another_span_contains():
    spans = [Span("b", 5, 6), Span("a", 1, 4), Span("a.child", 2, 3), Span("c", 6, 9)]
    assert [s.name for s in outermost(spans)] == ["a", "b", "c"]


def test_timeline_splits_recorded_calls_from_the_entry_own_time():
    mark = Span("entry", 10, 30)
    events = [mark, Span("aten::empty", 12, 14), Span("cudaLaunchKernel", 20, 25), Span("inner", 21, 22),
              Span("outside", 31, 40)]
    result = timeline(mark, events)
    assert result["total_us"] == 20 and result["own_us"] == 20 - 2 - 5
    assert [(e["at_us"], e["us"], e["name"]) for e in result["events"]] == [(2, 2, "aten::empty"),
                                                                          (10, 5, "cudaLaunchKernel")]


def test_main_times_each_entry_point_its_backward_and_group_norm(tmp_path, monkeypatch, capsys):
    from kgen.bench import entry_timeline as ht

    solution = tmp_path / "solution.py"
    solution.write_text(
        "import types\nimport torch\n\n"
        "_ext = types.SimpleNamespace(region0=lambda x, w, b, g, eps: torch.group_norm(x, g, w, b, eps) * 2)\n\n\n"
        "class ModelNew(torch.nn.Module):\n"
        "    def __init__(self, c):\n        super().__init__()\n        self.norm = torch.nn.GroupNorm(2, c)\n\n"
        "    def forward(self, x):\n"
        "        return _ext.region0(x, self.norm.weight, self.norm.bias, 2, self.norm.eps)\n\n\n"
        "def get_inputs():\n    return [torch.randn(2, 4, 8)]\n\n\n"
        "def get_init_inputs():\n    return [4]\n")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a: None)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *a: "stub")
    monkeypatch.setattr(torch.Tensor, "cuda", lambda self, *a, **k: self)
    monkeypatch.setattr(torch.nn.Module, "cuda", lambda self, *a, **k: self)
    monkeypatch.setattr(ht, "ACTIVITIES_CUDA", False)
    out = tmp_path / "timeline.json"
    monkeypatch.setattr("sys.argv", ["entry_timeline", str(solution), "--calls", "5", "--json", str(out)])
    assert ht.main() == 0
    report = json.loads(out.read_text())
    labels = [e["entry"] for e in report["entries"]]
    assert labels == ["region0", "region0 as torch.group_norm", "region0's backward node",
                      "region0 as torch.group_norm, its backward node"]
    first = report["entries"][0]
    assert first["unprofiled_us"] > 0 and first["total_us_median"] >= first["own_us_median"] >= 0
    assert {"aten::group_norm", "aten::mul"} <= {e["name"] for e in first["median_replay"]["events"]}
    backward = report["entries"][2]
    assert any("backward" in e["name"].lower() for e in backward["median_replay"]["events"]), backward
    assert "in no recorded call" in capsys.readouterr().out


def test_timeline_nests_what_each_event_contains():
    mark = Span("entry", 0, 100)
    node = Span("kgen::Region0Backward", 10, 90)
    events = [node, Span("aten::empty", 12, 14), Span("cudaLaunchKernel", 20, 30), Span("aten::sum", 40, 60),
              Span("cudaLaunchKernel", 45, 50)]
    result = timeline(mark, events)
    assert [e["name"] for e in result["events"]] == ["kgen::Region0Backward"] and result["own_us"] == 20
    inner = result["events"][0]["inside"]
    assert [e["name"] for e in inner["events"]] == ["aten::empty", "cudaLaunchKernel", "aten::sum"]
    assert inner["own_us"] == 80 - 2 - 10 - 20
    assert [e["name"] for e in inner["events"][2]["inside"]["events"]] == ["cudaLaunchKernel"]
