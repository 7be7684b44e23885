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
