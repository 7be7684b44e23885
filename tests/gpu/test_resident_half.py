"""The resident kernels on a float16 / bfloat16 region input as it lies (resident_half_applies,
groupnorm/resident/host.cuh): the tiles hold x and dout as they lie, converted where a pass reads them, and the
arithmetic is the float32 path's, so outputs and every gradient must be the same bits as the float32 path's, which
reads float32 copies. The float32 path is taken by the same file on an input 2 bytes off an 8-byte boundary
(contiguous, so the only difference); the half run's kernels are checked to be the resident kernels in x's dtype. One
reference per reduction kind (none, over channels, over the plane, over the sample, over windows), with parameters in
the prologue and an epilogue that reads the prologue's input too, and one without a prologue; at shapes from 49-value
planes to 4 k-value slices, odd planes among them. The region reads the model's input, so the input's alignment picks
the path. Needs a CUDA device."""
import textwrap

import pytest
import torch

from tests.gpu.half_precision import emitted_modules, kernel_names, misaligned

pytestmark = pytest.mark.gpu

REFERENCE = textwrap.dedent('''\
    import torch
    import torch.nn as nn
    import torch.nn.functional as F


    class Model(nn.Module):
        def __init__(self, channels, groups):
            super().__init__()
            self.gn = nn.GroupNorm(groups, channels)
            self.scale = nn.Parameter(torch.rand(channels, 1, 1) + 0.5)
            self.shift = nn.Parameter(torch.randn(channels, 1, 1))

        def forward(self, x):
            {body}


    def get_inputs():
        return [torch.randn(8, 64, 16, 16)]


    def get_init_inputs():
        return [64, 8]
    ''')



def _forward(result: str, prologue: str = "x * self.scale") -> str:
    """The forward's lines (at REFERENCE's indentation): the region's input h, its output y, the result."""
    lines = [f"h = {prologue}", "y = torch.sigmoid(self.gn(h)) * h * self.scale + self.shift + x", f"return {result}"]
    return "\n        ".join(lines)


# The reductions after the region; "none_plain" without a prologue, whose forward only reads x's tile, never writes one.
KINDS = {
    "none": _forward("y"),
    "none_plain": _forward("y", prologue="x"),
    "lse_channels": _forward("torch.logsumexp(y, dim=1)"),
    "mean_plane": _forward("y.mean(dim=(2, 3))"),
    "sum_sample": _forward("y.sum(dim=(1, 2, 3))"),
    "max_window": _forward("F.max_pool2d(y, 2)"),
}
# (batch, channels, height, width, groups): 2 k-value slices, odd planes (17 x 13, 9 x 20), 49-value planes, 1 k-value
# slices over a batch that fills the GPU. Every sample fits a resident tile (the unit of the reductions over channels
# and over the sample).
SHAPES = [(8, 64, 16, 16, 8), (16, 32, 17, 13, 4), (4, 48, 7, 7, 6), (3, 40, 9, 20, 5), (256, 64, 16, 16, 16)]
DTYPES = [torch.bfloat16, torch.float16]


@pytest.fixture(scope="module")
def solutions(tmp_path_factory):
    return emitted_modules(tmp_path_factory.mktemp("resident_half"), REFERENCE, KINDS)


@pytest.mark.parametrize("dtype", DTYPES, ids=["bf16", "fp16"])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_resident_kernels_in_half_precision_are_the_float32_paths_bits(solutions, kind, shape, dtype):
    *size, groups = shape
    torch.manual_seed(0)
    model = solutions[kind].ModelNew(size[1], groups).cuda().to(dtype)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.rand_like(p) * 0.1)   # no parameter at its initial constant
    x = torch.randn(*size, device="cuda", dtype=dtype) * 2 + 0.5   # the region's input, 8-byte aligned

    def step(inp):
        model.zero_grad(set_to_none=True)
        inp = inp.detach().requires_grad_(True)
        out = model(inp)
        torch.manual_seed(1)
        out.backward(torch.randn_like(out))
        return out.detach(), inp.grad, [p.grad.clone() for p in model.parameters()]

    fast = step(x)
    slow = step(misaligned(x))
    assert fast[0].dtype == dtype
    assert torch.equal(fast[0], slow[0]), f"output: max |diff| {(fast[0].float() - slow[0].float()).abs().max()}"
    assert torch.equal(fast[1], slow[1]), "input gradient"
    for k, (a, b) in enumerate(zip(fast[2], slow[2])):
        assert torch.equal(a, b), f"parameter gradient {k}: max |diff| {(a.float() - b.float()).abs().max()}"
    assert x.data_ptr() % 8 == 0
    storage = "__nv_bfloat16" if dtype == torch.bfloat16 else "__half"
    fast_names = kernel_names(lambda: step(x))
    slow_names = kernel_names(lambda: step(misaligned(x)))
    assert any("region_resident_forward" in n for n in fast_names), fast_names
    for direction in ("forward", "backward"):   # each direction in x's dtype where the float32 path runs it resident
        fast_kernels = [n for n in fast_names if f"region_resident_{direction}" in n]
        slow_kernels = [n for n in slow_names if f"region_resident_{direction}" in n]
        assert not any(storage in n for n in slow_kernels), slow_kernels
        assert bool(fast_kernels) == bool(slow_kernels), (fast_names, slow_names)
        assert all(storage in n for n in fast_kernels), fast_kernels
