"""GroupNorm (L1-35) kernels against PyTorch and against float64, at shapes that exercise every path:
16-byte and scalar sweeps, the specialised and the generic group count, 2-D to 5-D inputs, one group
and one channel per group, non-contiguous input, a large common offset; each for the one-pass forward
(the default) and the two-pass one."""
import pytest
import torch
import torch.nn.functional as F

from tests.solution_loader import load_solution

pytestmark = pytest.mark.gpu

SHAPES = [
    # (shape, groups)
    ((2, 64, 32, 32), 8),      # specialised group count, 16-byte path
    ((3, 64, 33, 17), 8),      # odd plane: scalar path
    ((4, 96, 20, 20), 12),     # generic group count
    ((2, 64, 8, 8), 1),        # one group
    ((2, 64, 8, 8), 64),       # one channel per group
    ((5, 32, 7), 4),           # 3-D input
    ((6, 16), 4),              # 2-D input: one value per plane
    ((1, 8, 3, 4, 5), 2),      # 5-D input
    ((2, 64, 256, 256), 8),    # many splits per slice
]


@pytest.fixture(scope="module", params=["one-pass", "two-pass"])
def solution(request, tmp_path_factory):
    """The default (one-pass forward where the planner finds it fits, e.g. the 2 x 64 x 256 x 256 shape on a
    Hopper GPU; two passes elsewhere) and the two-pass kernels only."""
    return load_solution(tmp_path_factory.mktemp("gn"), "groupnorm", groups=8, block_size=256, forward=request.param)


def make_model(solution, channels, groups, seed):
    torch.manual_seed(seed)
    model = solution.ModelNew(channels, groups).cuda()
    with torch.no_grad():  # non-trivial affine parameters
        model.gn.weight.normal_(1.0, 0.5)
        model.gn.bias.normal_(0.0, 0.5)
    return model


def reference(x, model, dtype):
    w = model.gn.weight.detach().to(dtype).requires_grad_()
    b = model.gn.bias.detach().to(dtype).requires_grad_()
    xr = x.detach().to(dtype).requires_grad_()
    y = F.group_norm(xr, model.gn.num_groups, w, b, model.gn.eps)
    return xr, w, b, y


def rel_err(a, b):
    return ((a.double() - b.double()).abs().max() / b.double().abs().max().clamp_min(1e-30)).item()


@pytest.mark.parametrize("shape, groups", SHAPES)
def test_forward_and_backward_match_float64(solution, shape, groups):
    model = make_model(solution, shape[1], groups, seed=sum(shape) + groups)
    x = (torch.rand(shape, device="cuda") * 4 - 1).requires_grad_()
    y = model(x)
    dy = torch.randn_like(y)
    y.backward(dy)
    for dtype, tol in ((torch.float32, 1e-4), (torch.float64, 1e-4)):
        xr, w, b, yr = reference(x, model, dtype)
        yr.backward(dy.to(dtype))
        torch.testing.assert_close(y.double(), yr.double(), atol=tol, rtol=tol)
        torch.testing.assert_close(x.grad.double(), xr.grad.double(), atol=tol, rtol=tol)
        torch.testing.assert_close(model.gn.weight.grad.double(), w.grad.double(), atol=tol * 10, rtol=tol)
        torch.testing.assert_close(model.gn.bias.grad.double(), b.grad.double(), atol=tol * 10, rtol=tol)


def test_large_offset_small_spread(solution):
    """1e4 + 1e-2 randn: E[x^2] - E[x]^2 in float32 would lose every digit of the variance."""
    model = make_model(solution, 64, 8, seed=1)
    x = 1e4 + 1e-2 * torch.randn(2, 64, 64, 64, device="cuda")
    _, _, _, y64 = reference(x, model, torch.float64)
    assert rel_err(model(x), y64) < 1e-3


def test_non_contiguous_input(solution):
    model = make_model(solution, 64, 8, seed=2)
    base = torch.rand(2, 32, 32, 64, device="cuda")
    x = base.permute(0, 3, 1, 2)  # channels-last view of a (2, 64, 32, 32) tensor
    assert not x.is_contiguous()
    _, _, _, y64 = reference(x, model, torch.float64)
    y = model(x)
    assert y.is_contiguous() and rel_err(y, y64) < 1e-5
    assert torch.equal(x, base.permute(0, 3, 1, 2))


def test_deterministic(solution):
    model = make_model(solution, 64, 8, seed=3)
    x = torch.rand(4, 64, 64, 64, device="cuda", requires_grad=True)
    dy = torch.randn(4, 64, 64, 64, device="cuda")
    runs = []
    for _ in range(2):
        x.grad = None
        model.zero_grad(set_to_none=True)
        y = model(x)
        y.backward(dy)
        runs.append((y.detach().clone(), x.grad.clone(), model.gn.weight.grad.clone()))
    for a, b in zip(*runs):
        assert torch.equal(a, b)


@pytest.mark.parametrize(
    "make_input, message",
    [
        (lambda: torch.rand(2, 64, 8, 8), "CUDA"),
        (lambda: torch.rand(2, 64, 8, 8, device="cuda", dtype=torch.float64), "float32"),
        (lambda: torch.rand(64, device="cuda"), "shape"),
        (lambda: torch.rand(2, 32, 8, 8, device="cuda"), "weight/bias must have shape"),
    ],
)
def test_bad_input_is_a_clear_error(solution, make_input, message):
    model = make_model(solution, 64, 8, seed=4)
    with pytest.raises(RuntimeError, match=message):
        model(make_input())


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "fp16"])
@pytest.mark.parametrize("shape, groups", SHAPES)
def test_a_half_model_rounds_as_pytorchs_group_norm(solution, shape, groups, dtype):
    """A model and input moved to float16 / bfloat16 (KernelBench's --precision): PyTorch's CUDA GroupNorm keeps mean
    and rstd in that dtype and normalises with them; the file does the same (round_statistics), so its output is
    PyTorch's bit for bit but for rare one-ulp ties. With float32 statistics a quarter of the values differ, by up to
    0.06 at bfloat16 (KernelBench's 1e-2 fails)."""
    model = make_model(solution, shape[1], groups, seed=sum(shape) + 7).to(dtype)
    x = (torch.randn(shape, device="cuda") * 2 + 0.5).to(dtype)
    with torch.no_grad():
        y = model(x)
        want = F.group_norm(x, groups, model.gn.weight, model.gn.bias, model.gn.eps)
    assert y.dtype == dtype
    differ = (y != want).sum().item()
    assert differ <= max(2, y.numel() // 100), f"{differ} of {y.numel()} values differ from PyTorch's"
    torch.testing.assert_close(y, want, atol=1e-2, rtol=1e-2)


def test_a_half_input_to_a_float32_model_is_mixed_precision(solution):
    """A float16 x with float32 weights: a float16 output, as PyTorch's CPU GroupNorm gives (its CUDA kernel refuses
    mixed dtypes outside autocast). The file reads x in float16, computes in float32 with float32 statistics and
    rounds once, within an ulp of float64."""
    model = make_model(solution, 64, 8, seed=4)
    x = (torch.randn(2, 64, 8, 8, device="cuda") * 2 + 0.5).half()
    y = model(x)
    assert y.dtype == torch.float16
    want = torch.nn.functional.group_norm(x.double(), 8, model.gn.weight.double(), model.gn.bias.double(), model.gn.eps)
    torch.testing.assert_close(y.double(), want, atol=2e-3, rtol=2e-3)
