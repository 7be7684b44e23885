"""L2-92 Conv2d -> GroupNorm -> Tanh -> HardSwish -> residual add -> LogSumExp: the emitted model against the
reference Model (same seed, the same cuDNN conv: its output is bitwise the reference's, TF32 or not) and
against float64 (TF32 switched off for cuDNN there, since the reference's TF32 conv alone differs from
exact fp32 by ~1e-3), outputs and every gradient, at the reference's parameters and at shapes the
specialisation does not cover; large inputs, determinism, non-contiguous input and clear errors."""
import copy
import importlib.util
import inspect

import pytest
import torch

from kgen.specs import get_spec
from tests.solution_loader import load_solution

pytestmark = pytest.mark.gpu

SPEC = "conv-gn-tanh-hardswish-res-lse"
CASES = [
    # (init args (in_channels, out_channels, kernel_size, groups), input shape)
    ((8, 64, 3, 16), (8, 8, 128, 128)),  # the reference's parameters, batch 8: specialised groups, 16-byte path
    ((8, 32, 5, 8), (2, 8, 37, 29)),     # 8 groups (generic path), kernel 5, 33 x 25 planes (scalar path)
    ((3, 48, 3, 16), (3, 3, 20, 22)),    # 3 channels per group, 18 x 20 planes
]


def load_reference():
    path = get_spec(SPEC).reference_path({})
    module_spec = importlib.util.spec_from_file_location("reference_l2_92", path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def solution(tmp_path_factory):
    return load_solution(tmp_path_factory.mktemp("l2_92"), SPEC)


@pytest.fixture(scope="module")
def reference():
    return load_reference()


@pytest.fixture
def no_tf32():
    old = torch.backends.cudnn.allow_tf32
    torch.backends.cudnn.allow_tf32 = False
    yield
    torch.backends.cudnn.allow_tf32 = old


def make_pair(solution, reference, init, seed=7):
    torch.manual_seed(seed)
    ref = reference.Model(*init).cuda()
    torch.manual_seed(seed)
    new = solution.ModelNew(*init).cuda()
    assert new.state_dict().keys() == ref.state_dict().keys()
    for key, value in ref.state_dict().items():
        assert torch.equal(value, new.state_dict()[key]), key
    with torch.no_grad():  # non-trivial GroupNorm affine parameters, the same in both
        for model in (ref, new):
            torch.manual_seed(seed + 1)
            model.group_norm.weight.normal_(1.0, 0.5)
            model.group_norm.bias.normal_(0.0, 0.5)
    return ref, new


def run(model, x, dy):
    x = x.detach().clone().requires_grad_()
    y = model(x)
    y.backward(dy.to(y.dtype))
    return y.detach(), x.grad, {name: p.grad for name, p in model.named_parameters()}


def assert_all_close(got, want, tol=1e-4):
    y, dx, grads = got
    y_ref, dx_ref, grads_ref = want
    torch.testing.assert_close(y.double(), y_ref.double(), atol=tol, rtol=tol)
    torch.testing.assert_close(dx.double(), dx_ref.double(), atol=tol, rtol=tol)
    assert grads.keys() == grads_ref.keys()
    for name in grads_ref:  # sums over the batch and the image: tolerance relative to their size
        scale = grads_ref[name].abs().max().item()
        torch.testing.assert_close(grads[name].double(), grads_ref[name].double(), atol=tol * max(1.0, scale),
                                   rtol=tol, msg=name)


def test_signature_matches_reference(solution, reference):
    assert inspect.signature(solution.ModelNew.__init__) == inspect.signature(reference.Model.__init__)
    assert solution.get_init_inputs() == reference.get_init_inputs()
    assert [t.shape for t in solution.get_inputs()] == [t.shape for t in reference.get_inputs()]


@pytest.mark.parametrize("init, shape", CASES)
def test_matches_reference_model(solution, reference, init, shape):
    ref, new = make_pair(solution, reference, init)
    x = torch.rand(shape, device="cuda")
    with torch.no_grad():
        out_shape = ref(x).shape
    dy = torch.randn(out_shape, device="cuda")
    got = run(new, x, dy)
    assert got[0].shape == out_shape and got[0].is_contiguous()
    assert_all_close(got, run(ref, x, dy))


@pytest.mark.parametrize("init, shape", CASES)
def test_matches_float64(solution, reference, no_tf32, init, shape):
    ref, new = make_pair(solution, reference, init)
    ref64 = copy.deepcopy(ref).double()
    x = torch.rand(shape, device="cuda")
    with torch.no_grad():
        out_shape = ref(x).shape
    dy = torch.randn(out_shape, device="cuda")
    assert_all_close(run(new, x, dy), run(ref64, x.double(), dy.double()))


def test_large_inputs_stay_finite(solution, reference, no_tf32):
    """Inputs x100: conv values in the hundreds, a naive exp(r) would overflow."""
    ref, new = make_pair(solution, reference, (8, 64, 3, 16))
    ref64 = copy.deepcopy(ref).double()
    x = torch.rand(2, 8, 40, 40, device="cuda") * 100
    dy = torch.randn(2, 1, 38, 38, device="cuda")
    got = run(new, x, dy)
    assert torch.isfinite(got[0]).all() and torch.isfinite(got[1]).all()
    assert all(torch.isfinite(g).all() for g in got[2].values())
    want = run(ref64, x.double(), dy.double())
    scale = want[0].abs().max().item()
    torch.testing.assert_close(got[0].double(), want[0], atol=1e-4 * scale, rtol=1e-4)
    torch.testing.assert_close(got[1].double(), want[1], atol=1e-4 * want[1].abs().max().item(), rtol=1e-4)


def test_deterministic(solution, reference):
    _, new = make_pair(solution, reference, (8, 64, 3, 16))
    x = torch.rand(4, 8, 64, 64, device="cuda")
    dy = torch.randn(4, 1, 62, 62, device="cuda")
    runs = []
    for _ in range(2):
        new.zero_grad(set_to_none=True)
        y, dx, grads = run(new, x, dy)
        runs.append([y, dx] + [g.clone() for g in grads.values()])
    for a, b in zip(*runs):
        assert torch.equal(a, b)


def test_channels_last_input(solution, reference):
    ref, new = make_pair(solution, reference, (8, 64, 3, 16))
    x = torch.rand(2, 8, 30, 34, device="cuda").to(memory_format=torch.channels_last)
    kept = x.clone()
    dy = torch.randn(2, 1, 28, 32, device="cuda")
    assert_all_close(run(new, x, dy), run(ref, x, dy))
    assert torch.equal(x, kept)


def test_state_dict_round_trip(solution, reference):
    ref, new = make_pair(solution, reference, (8, 64, 3, 16))
    solution.ModelNew(8, 64, 3, 16).load_state_dict(ref.state_dict(), strict=True)
    reference.Model(8, 64, 3, 16).load_state_dict(new.state_dict(), strict=True)


@pytest.mark.parametrize(
    "make_input",
    [
        lambda: torch.rand(2, 8, 16, 16),                                       # on the CPU
        lambda: torch.rand(2, 8, 16, 16, device="cuda", dtype=torch.float64),   # another dtype than the parameters'
        lambda: torch.rand(2, 4, 16, 16, device="cuda"),                        # too few input channels
        lambda: torch.rand(8, 16, 16, device="cuda"),                           # unbatched
    ],
    ids=["cpu", "float64", "channels", "unbatched"],
)
def test_bad_model_input_is_the_references_error_or_a_clear_one(solution, reference, make_input):
    # The convolution is the reference's own PyTorch call and runs first: where it refuses the input, the emitted
    # model gives its very error; what passes it and reaches a region gets kgen's one-line error.
    ref, new = make_pair(solution, reference, (8, 64, 3, 16))
    x = make_input()
    with pytest.raises(RuntimeError) as theirs:
        ref(x)
    with pytest.raises(RuntimeError) as ours:
        new(x)
    assert str(ours.value).startswith("kgen: ") or type(ours.value) is type(theirs.value), str(ours.value)


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda a: {**a, "x": a["x"].flatten()}, r"the region input must have shape \(N, C, \*spatial\)"),
        (lambda a: {**a, "x": a["x"].cpu()}, "must be a CUDA tensor"),
        (lambda a: {**a, "x": a["x"].double()}, "must be float32, float16 or bfloat16"),
        (lambda a: {**a, "weight": a["weight"][:32]}, "GroupNorm weight/bias must have shape"),
        (lambda a: {**a, "groups": 12}, "not divisible"),
        (lambda a: {**a, "params": [a["params"][0][:8]]}, "a prologue parameter has 8 values"),
        (lambda a: {**a, "params": []}, "region0 takes 1 parameter tensor"),
    ],
    ids=["rank", "cpu", "float64", "weight", "groups", "parameter", "parameters"],
)
def test_bad_region_input_is_a_clear_error(solution, change, message):
    # The region's entry point (its C++ autograd node's) checks what it is given before any kernel runs: kgen's
    # one-line errors.
    p = torch.rand(64, device="cuda")
    args = dict(x=torch.rand(2, 64, 8, 8, device="cuda"), weight=p, bias=p, groups=16, eps=1e-5, window=[],
                params=[p])
    with pytest.raises(RuntimeError, match="kgen: .*" + message):
        solution._ext.region0(*change(args).values())
