"""The backward sees the forward's y to the bit (AffineForm, groupnorm/region.cuh): GroupNorm -> ReLU with an all-ones
upstream gradient makes the bias's gradient of channel c the count of positive outputs in channel c, exactly, wherever
the backward's mask is the forward's. Each kernel route (rows of one value a plane, resident slices, cluster forward
and two-pass backward), kgen's own form and PyTorch's (--faithful all, whose forward is also PyTorch's to the bit).
The inputs sit far from zero (1000 + randn), so native_group_norm's form (a z + b, b = beta - a mean) rounds y
differently from (z - mean) a + beta in a good share of the values near ReLU's kink: a backward that recomputes y in
another form than its forward's miscounts there. Needs a CUDA device."""
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tests.solution_loader import import_file

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parent.parent.parent
CHANNELS, GROUPS = 64, 8

REFERENCE = f'''import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, channels, groups):
        super().__init__()
        self.norm = nn.GroupNorm(groups, channels)

    def forward(self, x):
        return F.relu(self.norm(x))


def get_inputs():
    return [torch.randn(4, {CHANNELS}, 16, 16)]


def get_init_inputs():
    return [{CHANNELS}, {GROUPS}]
'''

# 2**24 values each: one value a plane (rows), 2,048-value slices (resident), 131,072-value slices (cluster forward,
# two-pass backward)
SHAPES = {"rows": (262144, CHANNELS), "resident": (1024, CHANNELS, 16, 16), "cluster": (16, CHANNELS, 128, 128)}


@pytest.fixture(scope="module")
def modules(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("kink")
    reference = tmp / "gn_relu_ref.py"
    reference.write_text(REFERENCE)
    emitted = {}
    for faithful in ("none", "all"):
        solution = tmp / f"gn_relu_{faithful}.py"
        done = subprocess.run([sys.executable, "-m", "kgen.cli", "emit", "--ref", str(reference), "--faithful",
                               faithful, "-o", str(solution)], capture_output=True, text=True, cwd=ROOT)
        assert done.returncode == 0, done.stderr
        emitted[faithful] = import_file(solution)
    return emitted, import_file(reference)


@pytest.mark.parametrize("faithful", ["none", "all"])
@pytest.mark.parametrize("route", sorted(SHAPES))
def test_bias_gradient_counts_the_forward_positives(modules, faithful, route):
    emitted, reference = modules
    torch.manual_seed(0)
    model = emitted[faithful].ModelNew(CHANNELS, GROUPS).cuda()
    ref = reference.Model(CHANNELS, GROUPS).cuda()
    with torch.no_grad():
        for m in (model, ref):
            m.norm.weight.copy_(torch.linspace(0.5, 2.0, CHANNELS))
            m.norm.bias.copy_(torch.linspace(-0.3, 0.3, CHANNELS))
    x = 1000.0 + torch.randn(SHAPES[route], device="cuda")
    out = model(x)
    out.backward(torch.ones_like(out))
    dims = [d for d in range(out.dim()) if d != 1]
    positives = (out > 0).sum(dim=dims).float()
    assert torch.equal(model.norm.bias.grad, positives), \
        (model.norm.bias.grad - positives).abs().max().item()
    expected = ref(x)
    if faithful == "all":
        assert torch.equal(out, expected)   # PyTorch's forward, to the bit
    else:   # PyTorch's own y rounds b = beta - a mean at ~2,000: ~1e-4 off
        torch.testing.assert_close(out, expected, atol=1e-3, rtol=1e-4)
