"""kgen.bench.host_profile on the CPU: the profile of a small model's calls, forward and forward+backward, names the
functions the calls spend their host time in, with their time a call."""
import torch

from kgen.bench.host_profile import host_profile


class Tiny(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(8, 8)

    def forward(self, x):
        return torch.nn.functional.gelu(self.linear(x))


def test_profile_names_the_calls_and_their_time():
    model = Tiny()
    x = torch.randn(4, 8)
    forward = host_profile(model, [x], backward=False, calls=20, top=50)
    assert forward["issue_ms_profiled"] > 0 and forward["wall_ms_synchronised"] > 0
    names = [row["function"] for row in forward["top"]]
    assert any("gelu" in n for n in names) and any("linear" in n for n in names), names
    assert all(row["own_us"] >= 0 and row["calls_per_call"] > 0 for row in forward["top"])
    both = host_profile(model, [x.requires_grad_()], backward=True, calls=20, top=50)
    assert any("backward" in row["function"] for row in both["top"]), [r["function"] for r in both["top"]]


def test_plain_times_split_out_the_extension_entry_points():
    import types

    from kgen.bench.host_profile import plain_times

    class Ext:
        def __init__(self):
            self.calls = 0

        def scale(self, x):
            self.calls += 1
            return x * 2

    module = types.SimpleNamespace(_ext=Ext())

    class Model(torch.nn.Module):
        def forward(self, x):
            return module._ext.scale(x) + 1

    ext = module._ext
    result = plain_times(module, Model(), [torch.randn(4, 8)], backward=False, calls=10)
    assert result["issue_ms"] > 0 and [r["entry"] for r in result["entry_points"]] == ["scale"]
    assert result["entry_points"][0]["us"] > 0 and module._ext is ext   # the recorder is gone after the call
    assert ext.calls == 1 + 10 + 1 + 1 + 10   # warm-up and timed calls, the recorded call, the replays
    assert "entry_points" not in plain_times(None, Model(), [torch.randn(4, 8)], backward=False, calls=5)


def test_main_alternates_the_contenders_and_reports_medians(tmp_path, monkeypatch, capsys):
    """main() end to end on the CPU (CUDA calls stubbed): each contender's unprofiled rounds and their median, the
    solution's entry points, the profiles, the JSON."""
    import json

    from kgen.bench import host_profile as hp

    solution = tmp_path / "solution.py"
    solution.write_text(
        "import types\nimport torch\n\n"
        "_ext = types.SimpleNamespace(double=lambda x: x * 2)\n\n\n"
        "class ModelNew(torch.nn.Module):\n"
        "    def __init__(self, n):\n        super().__init__()\n        self.linear = torch.nn.Linear(n, n)\n\n"
        "    def forward(self, x):\n        return _ext.double(self.linear(x))\n\n\n"
        "def get_inputs():\n    return [torch.randn(4, 8)]\n\n\n"
        "def get_init_inputs():\n    return [8]\n")
    reference = tmp_path / "reference.py"
    reference.write_text(
        "import torch\n\n\nclass Model(torch.nn.Module):\n    def __init__(self, n):\n        super().__init__()\n"
        "        self.linear = torch.nn.Linear(n, n)\n\n    def forward(self, x):\n        return self.linear(x) * 2\n")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a: None)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *a: "stub")
    monkeypatch.setattr(torch.Tensor, "cuda", lambda self, *a, **k: self)
    monkeypatch.setattr(torch.nn.Module, "cuda", lambda self, *a, **k: self)
    out = tmp_path / "host.json"
    monkeypatch.setattr("sys.argv", ["host_profile", str(solution), "--reference", str(reference), "--calls", "5",
                                     "--plain-calls", "3", "--rounds", "3", "--top", "5", "--json", str(out)])
    assert hp.main() == 0
    report = json.loads(out.read_text())
    for name in ("kgen", "eager"):
        for mode in ("forward", "forward_backward"):
            plain = report[f"{name}_{mode}_plain"]
            assert len(plain["issue_ms_rounds"]) == 3 and plain["issue_ms"] == sorted(plain["issue_ms_rounds"])[1]
            assert report[f"{name}_{mode}"]["top"]
    assert [r["entry"] for r in report["kgen_forward_plain"]["entry_points"]] == ["double"]
    assert "entry_points" not in report["eager_forward_plain"]
    assert "median of 3 rounds" in capsys.readouterr().out
