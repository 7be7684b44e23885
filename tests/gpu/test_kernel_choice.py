"""Which region kernels run, by slice size (the host's rules, docs/kernels.md): a GroupNorm then GELU (or a reduction) emitted with
`kgen emit --ref`, one forward and one backward under torch.profiler, the kernel names checked, and the output
against the reference's. The sizes sit on either side of the rules measured in benchmarks/results/h200/cliffs/:
the resident forward gives way to the cluster kernel from 6,144-value slices (sm_90), and the resident backward
needs kMinResidentBlocks of its own tiles (x and dout) an SM, except on planes the two-pass sweeps would launch a block
a few values for (kSweepMinPlane). Needs a CUDA device."""
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest
import torch

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parent.parent.parent

REFERENCE = '''import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, channels, groups):
        super().__init__()
        self.norm = nn.GroupNorm(groups, channels)

    def forward(self, x):
        return {body}


def get_inputs():
    return [torch.randn({shape})]


def get_init_inputs():
    return [{channels}, {groups}]
'''

GELU = "F.gelu(self.norm(x))"
# (shape, groups[, forward's body]) -> (forward kernel expected, backward kernel expected, kernels that must not run)
CASES = {
    # 1,024-value slices: resident both ways
    "slice_1024": (((2, 64, 16, 16), 16), "region_resident_forward", "region_resident_backward", ()),
    # 12,799-value rows (one channel a group): 3 forward tiles an SM, 2 backward ones
    "rows_12799": (((2, 8, 12799), 8), "cluster_forward", "region_twopass",
                   ("region_resident_forward", "region_resident_backward")),
    # 16,384-value slices of 4 channels: 1 backward tile an SM
    "slice_16384": (((2, 64, 64, 64), 16), "cluster_forward", "region_twopass",
                    ("region_resident_forward", "region_resident_backward")),
    # a Linear's output, then the min over channels (L2-75's region): one sample a unit, 2 backward tiles an SM, but
    # 1-value planes, where the two-pass sweeps would launch a block a value (kSweepMinPlane)
    "channel_min_plane_1": (((64, 8192), 512, "torch.min(self.norm(x), dim=1, keepdim=True)[0]"),
                            "region_rows_reduce", "region_rows_backward", ("region_twopass",)),
}


def load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def kernels(fn) -> list[str]:
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    return [e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]


@pytest.mark.parametrize("case", sorted(CASES))
def test_region_kernels_follow_the_slice_size(case, tmp_path):
    if torch.cuda.get_device_capability()[0] < 9:
        pytest.skip("the cluster forward needs sm_90")
    (shape, groups, *body), forward, backward, never = CASES[case]
    reference = tmp_path / f"{case}_ref.py"
    reference.write_text(REFERENCE.format(shape=", ".join(map(str, shape)), channels=shape[1], groups=groups,
                                          body=body[0] if body else GELU))
    solution = tmp_path / f"{case}.py"
    emitted = subprocess.run([sys.executable, "-m", "kgen.cli", "emit", "--ref", str(reference), "-o", str(solution)],
                             capture_output=True, text=True, cwd=ROOT)
    assert emitted.returncode == 0, emitted.stderr
    new_mod, ref_mod = load(solution, f"choice_{case}"), load(reference, f"choice_ref_{case}")
    torch.manual_seed(0)
    model = new_mod.ModelNew(shape[1], groups).cuda()
    torch.manual_seed(0)
    ref = ref_mod.Model(shape[1], groups).cuda()
    x = torch.randn(shape, device="cuda", requires_grad=True)
    out = model(x)
    grad = torch.randn_like(out)
    forward_names = kernels(lambda: model(x))
    backward_names = kernels(lambda: torch.autograd.backward(model(x), grad))
    assert any(forward in n for n in forward_names), forward_names
    assert any(backward in n and "backward" in n for n in backward_names), backward_names
    assert not [n for n in forward_names + backward_names if any(k in n for k in never)]
    torch.testing.assert_close(out, ref(x), atol=1e-4, rtol=1e-4)
