"""`kgen emit --ref` end to end on our own references (tests/ref/references): emit, then `kgen validate`
(outputs and every gradient against the reference and float64, determinism, state_dict), and a second
shape through --init-args/--input-shape where the reference allows it. Needs a CUDA device."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parent.parent.parent
OWN = sorted((ROOT / "tests" / "ref" / "references").glob("*.py")) + sorted((ROOT / "tests" / "ref" / "probe").glob("*.py"))
OTHER_SHAPES = {
    "conv1d_gn_noaffine_relu": (["[3, 16, 4, 4]"], ["[2, 3, 50]"]),
    "two_groupnorms": (["[24, 64, 8, 16]"], ["[5, 24]"]),
    "gn_channel_max_lse": (["[2, 5]"], ["[1, 2, 9, 13]"]),
    # 1024-value slices: the rows forward's widest teams (32 lanes x 8 packs)
    "linear_gelu_tanh_gn_short_slices": (["[20, 1024, 1]"], ["[3, 20]"]),
    # the batch norm step: planes of 16 x 16 (4-value packs, every element in a window); 512 channels of rows
    "convt_bn_tanh_maxpool_gn_odd": (["[8, 16, 4, 4]"], ["[4, 8, 15, 15]"]),
    "linear_bn1d_noaffine_relu_gn": (["[64, 512, 8]"], ["[256, 64]"]),
    # the rows forward's max over channels: 8 samples a block (default), 2 (here: 3 slices x 32 lanes)
    "linear_gn_max_broadcast_transpose": (["[48, 768, 3, 12]"], ["[7, 48]"]),
    # odd planes (7 x 9): the element-wise kernels' one-value packs; 3 samples of 16 channels
    "conv2d_gn_input_residual_gate": (["[16, 4]"], ["[3, 16, 7, 9]"]),
    # (N, F) with F = 96 channels of 1-value planes, N = 5
    "linear_gn_input_gate_rank1": (["[96, 6]"], ["[5, 96]"]),
    # PReLU's (C,) weight at another channel count (20 channels, 5 groups)
    "conv2d_prelu_gn_prelu_channels": (["[3, 20, 5]"], ["[2, 3, 7, 10]"]),
}


def emit(reference: Path, out: Path) -> None:
    result = subprocess.run([sys.executable, "-m", "kgen.cli", "emit", "--ref", str(reference), "-o", str(out)],
                            capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stderr


def validate(solution: Path, *extra) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kgen.cli", "validate", str(solution), "--trials", "2", *extra],
                          capture_output=True, text=True, cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)))


@pytest.mark.parametrize("reference", OWN, ids=lambda p: p.stem)
def test_emitted_solution_validates(reference, tmp_path):
    solution = tmp_path / f"{reference.stem}_solution.py"
    emit(reference, solution)
    result = validate(solution, "--json", str(tmp_path / "report.json"))
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-3000:]
    extra = OTHER_SHAPES.get(reference.stem)
    if extra:
        init_args, shapes = extra
        args = ["--init-args", init_args[0]] + [a for s in shapes for a in ("--input-shape", s)]
        result = validate(solution, *args)
        assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-3000:]


def emitted_pair(tmp_path, name):
    """tests/ref/references/NAME.py emitted into tmp_path: (the solution's module, the reference's module)."""
    from tests.solution_loader import import_file

    reference = ROOT / "tests" / "ref" / "references" / f"{name}.py"
    solution = tmp_path / f"{name}_solution.py"
    emit(reference, solution)
    return import_file(solution), import_file(reference)


def test_clamp_gradient_on_the_bounds(tmp_path):
    """Inputs lying exactly on the clamp bounds (0.25, 0.75): the emitted kernels' gradient there is the running
    PyTorch's (which changed between 2.11 and 2.15), element for element."""
    import torch

    sol, ref = emitted_pair(tmp_path, "gn_clamp_bounds")
    torch.manual_seed(0)
    model = ref.Model(*ref.get_init_inputs()).cuda()
    torch.manual_seed(0)
    new = sol.ModelNew(*ref.get_init_inputs()).cuda()
    x = torch.rand(4, 16, 12, 10, device="cuda")
    x.view(-1)[::7] = 0.25
    x.view(-1)[3::11] = 0.75
    upstream = torch.randn(4, 16, 12, 10, device="cuda", generator=torch.Generator("cuda").manual_seed(1))
    grads = []
    for m in (model, new):
        leaf = x.clone().requires_grad_()
        out = m(leaf)
        out.backward(upstream)
        grads.append(leaf.grad)
    on_bounds = (x == 0.25) | (x == 0.75)
    assert on_bounds.sum() > 100
    assert torch.allclose(grads[1][on_bounds], grads[0][on_bounds], atol=1e-4, rtol=1e-4)
    assert torch.allclose(grads[1], grads[0], atol=1e-4, rtol=1e-4)


def test_elementwise_kernels_read_strided_inputs_and_skip_unasked_gradients(tmp_path):
    """The element-wise kernel of three tensors (the region's output, a broadcast gate, the model's input) given a
    transposed (non-contiguous) input, then an input that asks for no gradient: outputs and the gradients
    asked for match the reference's."""
    import torch

    sol, ref = emitted_pair(tmp_path, "conv2d_gn_input_residual_gate")
    torch.manual_seed(3)
    model = ref.Model(*ref.get_init_inputs()).cuda()
    new = sol.ModelNew(*ref.get_init_inputs()).cuda()
    new.load_state_dict(model.state_dict())
    base = torch.rand(4, 32, 20, 20, device="cuda")
    for x, wants_grad in ((base.transpose(2, 3), True), (base, False)):
        assert wants_grad is False or not x.is_contiguous()
        upstream = torch.randn(4, 32, 20, 20, device="cuda")
        results = []
        for m in (model, new):
            m.zero_grad()
            leaf = x.detach().clone().requires_grad_(wants_grad) if wants_grad else x
            out = m(leaf)
            out.backward(upstream)
            results.append((out.detach(), leaf.grad if wants_grad else None, m.gate.grad.clone(),
                            m.conv.weight.grad.clone()))
        (out0, dx0, dgate0, dw0), (out1, dx1, dgate1, dw1) = results
        assert torch.allclose(out1, out0, atol=1e-4, rtol=1e-4)
        assert torch.allclose(dgate1, dgate0, atol=1e-3, rtol=1e-3)
        assert torch.allclose(dw1, dw0, atol=1e-3, rtol=1e-3)
        if wants_grad:
            assert torch.allclose(dx1, dx0, atol=1e-4, rtol=1e-4)


# --conv fused on our own references: (reference, whether kgen's conv takes the call at the reference's shape).
CONV_FUSED = [("convt2d_nobias_gn_silu_scale", True),       # no conv bias; an epilogue with a parameter; odd planes
              ("convt2d_gelu_gn_residual", True),           # a residual of the region's input (direct gradients)
              ("convt2d_gn_noaffine_tanh_residual", False)]  # stride 2: the library conv and the region run


@pytest.mark.parametrize("name, fused", CONV_FUSED)
def test_conv_fused_against_float64(tmp_path, name, fused):
    """`kgen emit --ref --conv fused`: kgen's TF32 conv where it takes the call (output and input gradient within
    1e-2 of the reference run in float64, parameter gradients, sums over the batch, within 3e-2 of their scale;
    the same where cuDNN's conv runs with TF32 allowed), the library conv and the region with TF32 off (1e-4); the
    forward without autograd within 1e-4 of the autograd forward's output."""
    import copy

    import torch

    from tests.solution_loader import import_file

    reference = ROOT / "tests" / "ref" / "references" / f"{name}.py"
    solution = tmp_path / f"{name}_fused.py"
    result = subprocess.run([sys.executable, "-m", "kgen.cli", "emit", "--ref", str(reference), "--conv", "fused",
                             "-o", str(solution)], capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    sol, ref = import_file(solution), import_file(reference)
    assert "_region0_convt(" in solution.read_text()
    saved = torch.backends.cudnn.allow_tf32
    try:
        for tf32 in (True, False):
            torch.backends.cudnn.allow_tf32 = tf32
            torch.manual_seed(5)
            model = ref.Model(*ref.get_init_inputs()).cuda()
            torch.manual_seed(5)
            new = sol.ModelNew(*ref.get_init_inputs()).cuda()
            with torch.no_grad():
                for p in model.parameters():
                    p.add_(torch.randn_like(p) * 0.3)
                new.load_state_dict(model.state_dict())
            calls = []
            fused_apply = sol._Region0ConvT.apply
            sol._Region0ConvT.apply = lambda *a: calls.append(1) or fused_apply(*a)
            x = torch.rand(ref.get_inputs()[0].shape, device="cuda")
            with torch.no_grad():
                dy = torch.randn_like(model(x))
            x_new = x.clone().requires_grad_()
            y = new(x_new)
            y.backward(dy)
            sol._Region0ConvT.apply = fused_apply
            assert len(calls) == int(fused and tf32)
            double = copy.deepcopy(model).double()
            x64 = x.double().requires_grad_()
            y64 = double(x64)
            y64.backward(dy.double())
            tol, param_tol = (1e-2, 3e-2) if tf32 else (1e-4, 1e-4)   # TF32: kgen's conv or cuDNN's
            torch.testing.assert_close(y.double(), y64, atol=tol, rtol=tol)
            torch.testing.assert_close(x_new.grad.double(), x64.grad, atol=tol, rtol=tol)
            for (pname, p), p64 in zip(new.named_parameters(), double.parameters()):
                scale = max(1.0, p64.grad.abs().max().item())
                torch.testing.assert_close(p.grad.double(), p64.grad, atol=param_tol * scale, rtol=param_tol,
                                           msg=pname)
            with torch.no_grad():
                torch.testing.assert_close(new(x), y.detach(), atol=1e-4, rtol=1e-4)
    finally:
        torch.backends.cudnn.allow_tf32 = saved
