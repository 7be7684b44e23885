"""The Python side of `--conv fused` (kgen emit convt-gelu-groupnorm --conv fused, the planner on L2-19's bundled
reference), on the CPU with the CUDA extension replaced by PyTorch ops in float64: ModelNew takes kgen's conv where
the extension says the wgmma conv takes the call and TF32 is allowed (one launch without autograd), the reference's
conv and the region's kernels elsewhere, and either way its output and every gradient (input, conv weight and bias,
GroupNorm weight and bias) equal the reference Model's: the autograd Function's saved tensors, the prologue slots
and the order of its gradients are what this checks. The kernels themselves are checked on the GPU
(tests/gpu/test_convt_wgmma.py, tests/gpu/test_convt_gelu_groupnorm.py)."""
import types

import pytest
import torch
import torch.nn.functional as F
import torch.utils.cpp_extension

from kgen.emit import emit
from kgen.specs import get_spec


class FakeExtension:
    """Region 0 of the fused file (GELU(x + conv bias) -> GroupNorm) and kgen's conv before it, computed by PyTorch
    (float64 on the CPU). Calls are counted."""

    def __init__(self):
        self.calls = {"convt_forward": 0, "convt_inference": 0, "region_forward": 0}
        self.eps = None

    @staticmethod
    def region0_convt_unsupported(x, weight, groups, stride, padding, output_padding, dilation, conv_groups):
        plain = stride == [1, 1] and dilation == [1, 1] and conv_groups == 1 and output_padding == [0, 0]
        return "" if plain else "it takes stride 1, dilation 1, one conv group and no output padding only"

    def _region(self, z, prologue, gamma, beta, groups, eps):
        self.eps = eps
        g = F.gelu(z + prologue[0].view(1, -1, 1, 1))
        flat = g.reshape(g.shape[0], groups, -1)
        mean, var = flat.mean(-1), flat.var(-1, unbiased=False)
        stats = torch.stack([mean, torch.zeros_like(mean)], -1), torch.rsqrt(var + eps)
        return F.group_norm(g, groups, gamma, beta, eps), stats

    def _region_grads(self, dout, z, gamma, beta, prologue, groups):
        with torch.enable_grad():
            leaves = [t.detach().requires_grad_() for t in (z, prologue[0], gamma, beta)]
            y, _ = self._region(leaves[0], [leaves[1]], leaves[2], leaves[3], groups, self.eps)
            dz, dconv_bias, dgamma, dbeta = torch.autograd.grad(y, leaves, dout)
        return dz, dgamma, dbeta, dconv_bias.reshape(1, -1), torch.zeros(0, z.shape[1], dtype=z.dtype)

    def region0_convt_forward(self, x, conv_weight, weight, bias, prologue, epilogue, groups, eps, padding):
        self.calls["convt_forward"] += 1
        z = F.conv_transpose2d(x, conv_weight, None, 1, padding)
        out, (mean, rstd) = self._region(z, prologue, weight, bias, groups, eps)
        return [out, z, mean, rstd]

    def region0_convt_inference(self, x, conv_weight, weight, bias, prologue, epilogue, groups, eps, padding):
        self.calls["convt_inference"] += 1
        return self._region(F.conv_transpose2d(x, conv_weight, None, 1, padding), prologue, weight, bias, groups,
                            eps)[0]

    def region0_convt_backward(self, dout, x, conv_weight, z, weight, bias, prologue, epilogue, mean, rstd, groups,
                               padding, input_grad, weight_grad):
        dz, dgamma, dbeta, dprologue, depilogue = self._region_grads(dout, z, weight, bias, prologue, groups)
        dx, dconv_weight, _ = torch.ops.aten.convolution_backward(
            dz, x, conv_weight, None, [1, 1], padding, [1, 1], True, [0, 0], 1, [input_grad, weight_grad, False])
        return [dx if input_grad else None, dconv_weight if weight_grad else None, dgamma, dbeta, dprologue, depilogue]

    def region0_forward(self, x, weight, bias, prologue, epilogue, groups, eps, window, for_backward, rounding):
        self.calls["region_forward"] += 1
        out, (mean, rstd) = self._region(x, prologue, weight, bias, groups, eps)
        return [out, mean, rstd, None]

    def region0_backward(self, dout, x, weight, bias, prologue, epilogue, mean, rstd, out, aux, groups, window,
                         rounding):
        return list(self._region_grads(dout, x, weight, bias, prologue, groups))


def load(text: str, monkeypatch, extension) -> types.ModuleType:
    monkeypatch.setattr(torch.utils.cpp_extension, "load_inline", lambda **kwargs: extension)
    module = types.ModuleType("fused_solution")
    exec(compile(text, "fused_solution.py", "exec"), module.__dict__)
    return module


def reference_module() -> types.ModuleType:
    path = get_spec("convt-gelu-groupnorm").reference_path({})
    module = types.ModuleType("reference_l2_19")
    exec(compile(path.read_text(), str(path), "exec"), module.__dict__)
    return module


def run(model, x, dy):
    x = x.clone().requires_grad_()
    y = model(x)
    y.backward(dy)
    return [y, x.grad] + [p.grad for p in model.parameters()]


def models(monkeypatch, init, extension):
    solution = load(emit("convt-gelu-groupnorm", {"conv": "fused"})[0], monkeypatch, extension)
    torch.manual_seed(3)
    ref = reference_module().Model(*init).double()
    torch.manual_seed(3)
    new = solution.ModelNew(*init).double()
    with torch.no_grad():  # a conv bias and GroupNorm affine far from their initial values
        for model in (ref, new):
            torch.manual_seed(4)
            for p in (model.conv_transpose.bias, model.group_norm.weight, model.group_norm.bias):
                p.normal_(0.5, 0.5)
    return ref, new


@pytest.mark.parametrize("init, shape, fused", [
    ((8, 12, 3, 1, 1, 4), (2, 8, 5, 6), True),      # stride 1: kgen's conv
    ((6, 8, 2, 1, 1, 2), (1, 6, 4, 3), True),       # kernel 2, batch 1
    ((8, 12, 3, 2, 1, 4), (2, 8, 5, 6), False),     # stride 2: the library conv and the region
])
@pytest.mark.parametrize("tf32", [True, False])
def test_fused_model_equals_the_reference(monkeypatch, init, shape, fused, tf32):
    extension = FakeExtension()
    ref, new = models(monkeypatch, init, extension)
    monkeypatch.setattr(torch.backends.cudnn, "allow_tf32", tf32)
    x = torch.rand(shape, dtype=torch.float64)
    dy = torch.randn(ref(x).shape, dtype=torch.float64)
    got, want = run(new, x, dy), run(ref, x, dy)
    for name, a, b in zip(["output", "input grad"] + [n for n, _ in new.named_parameters()], got, want):
        torch.testing.assert_close(a, b, atol=1e-10, rtol=1e-10, msg=name)
    taken = fused and tf32
    assert extension.calls == {"convt_forward": int(taken), "convt_inference": 0, "region_forward": int(not taken)}


def test_fused_model_without_autograd_is_one_launch(monkeypatch):
    extension = FakeExtension()
    ref, new = models(monkeypatch, (8, 12, 3, 1, 1, 4), extension)
    x = torch.rand(2, 8, 5, 6, dtype=torch.float64)
    with torch.no_grad():
        torch.testing.assert_close(new(x), ref(x), atol=1e-10, rtol=1e-10)
    assert extension.calls == {"convt_forward": 0, "convt_inference": 1, "region_forward": 0}
