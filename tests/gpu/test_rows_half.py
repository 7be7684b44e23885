"""The rows kernels on a Linear's float16 / bfloat16 output as it lies (rows_half_applies, groupnorm/resident/host.cuh):
the same arithmetic as on the float32 copies the other kernels read, so outputs and every gradient must be the same
bits as the float32 path's. The float32 path is taken by the same file on an input 2 bytes off an 8-byte boundary
(contiguous, so the only difference); the half run's kernels are checked to be the rows kernels in x's dtype, with
no copy of x. One reference per reduction the rows kernels take (none, a min over channels, a log-sum-exp over
channels, a mean over each sample), with parameters in the prologue and the epilogue, at several shapes (a pack a
lane up to teams wider than a warp). The region reads the model's input (a Linear's output shape), so the input's
alignment picks the path. Needs a CUDA device."""
import textwrap

import pytest
import torch

from tests.gpu.half_precision import emitted_modules, kernel_names, misaligned

pytestmark = pytest.mark.gpu

REFERENCE = textwrap.dedent('''\
    import torch
    import torch.nn as nn


    class Model(nn.Module):
        def __init__(self, features, groups):
            super().__init__()
            self.gn = nn.GroupNorm(groups, features)
            self.scale = nn.Parameter(torch.rand(features) + 0.5)
            self.shift = nn.Parameter(torch.randn(features))

        def forward(self, x):
            h = x * self.scale
            y = torch.sigmoid(self.gn(h)) * h + self.shift
            return {body}


    def get_inputs():
        return [torch.randn(64, 256)]


    def get_init_inputs():
        return [256, 16]
    ''')

KINDS = {
    "none": "y",
    "min_channels": "torch.min(y, dim=1, keepdim=True)[0]",
    "lse_channels": "torch.logsumexp(y, dim=1)",
    "mean_sample": "y.mean(dim=1)",
}
# (batch, features, groups): 4-value slices (a pack a lane), 16 and 64 values, 512 values (a team past a warp),
# an odd batch
SHAPES = [(64, 256, 64), (33, 256, 16), (128, 1024, 16), (16, 2048, 4)]
DTYPES = [torch.bfloat16, torch.float16]


@pytest.fixture(scope="module")
def solutions(tmp_path_factory):
    return emitted_modules(tmp_path_factory.mktemp("rows_half"), REFERENCE, KINDS)


@pytest.mark.parametrize("dtype", DTYPES, ids=["bf16", "fp16"])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_rows_kernels_in_half_precision_are_the_float32_paths_bits(solutions, kind, shape, dtype):
    batch, features, groups = shape
    torch.manual_seed(0)
    model = solutions[kind].ModelNew(features, groups).cuda().to(dtype)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.rand_like(p) * 0.1)   # no parameter at its initial constant
    x = torch.randn(batch, features, device="cuda", dtype=dtype) * 2 + 0.5   # the region's input, 8-byte aligned

    def step(inp):
        model.zero_grad(set_to_none=True)
        inp = inp.detach().requires_grad_(True)
        out = model(inp)
        torch.manual_seed(1)
        out.backward(torch.randn_like(out))
        return out.detach(), inp.grad, [p.grad.clone() for p in model.parameters()]

    fast = step(x)
    slow = step(misaligned(x))
    assert torch.equal(fast[0], slow[0]), f"output: max |diff| {(fast[0].float() - slow[0].float()).abs().max()}"
    assert torch.equal(fast[1], slow[1]), "input gradient"
    for k, (a, b) in enumerate(zip(fast[2], slow[2])):
        assert torch.equal(a, b), f"parameter gradient {k}: max |diff| {(a.float() - b.float()).abs().max()}"
    assert x.data_ptr() % 8 == 0
    names = kernel_names(lambda: step(x))
    storage = "__nv_bfloat16" if dtype == torch.bfloat16 else "__half"
    rows = [n for n in names if "region_rows" in n]
    assert any(storage in n for n in rows if "forward" in n or "reduce" in n), rows
    assert any(storage in n for n in rows if "backward" in n), rows
