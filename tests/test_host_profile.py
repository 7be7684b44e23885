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
