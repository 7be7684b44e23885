"""The Python side of `kgen emit convt-gelu-groupnorm --conv fused`, on the CPU with the CUDA extension replaced by
PyTorch ops in float64: ModelNew takes the fused path where the extension says the wgmma conv takes the call and
TF32 is allowed, the exact mode's path elsewhere, and either way its output and every gradient (input, conv weight
and bias, GroupNorm weight and bias) equal the reference Model's: the autograd Function's saved tensors, its call
of cuDNN's convolution backward and the order of its gradients are what this checks. The kernels themselves are
checked on the GPU (tests/gpu/test_convt_gelu_groupnorm.py, tests/gpu/test_convt_wgmma.py)."""
import types

import pytest
import torch
import torch.nn.functional as F
import torch.utils.cpp_extension

from kgen.emit import emit
from kgen.specs import get_spec


class FakeExtension:
    """The fused file's extension functions, computed by PyTorch (float64 on the CPU). Calls are counted."""

    def __init__(self):
        self.calls = {"convt_fused_forward": 0, "groupnorm_forward": 0}
        self.eps = None

    @staticmethod
    def convt_fused_unsupported(x, weight, bias, groups, stride, padding, output_padding, dilation, conv_groups):
        plain = stride == [1, 1] and dilation == [1, 1] and conv_groups == 1 and output_padding == [0, 0]
        return "" if plain else "it takes stride 1, dilation 1, one conv group and no output padding only"

    def _normalised(self, z, conv_bias, gamma, beta, groups, eps):
        self.eps = eps
        g = F.gelu(z + conv_bias.view(1, -1, 1, 1))
        flat = g.reshape(g.shape[0], groups, -1)
        mean, var = flat.mean(-1), flat.var(-1, unbiased=False)
        stats = torch.stack([mean, torch.zeros_like(mean)], -1), torch.rsqrt(var + eps)
        return F.group_norm(g, groups, gamma, beta, eps), stats

    def convt_fused_forward(self, x, weight, conv_bias, gamma, beta, groups, eps, padding):
        self.calls["convt_fused_forward"] += 1
        z = F.conv_transpose2d(x, weight, None, 1, padding)
        y, (mean, rstd) = self._normalised(z, conv_bias, gamma, beta, groups, eps)
        return [y, z, mean, rstd]

    def groupnorm_forward(self, x, conv_bias, gamma, beta, groups, eps):
        self.calls["groupnorm_forward"] += 1
        y, (mean, rstd) = self._normalised(x, conv_bias, gamma, beta, groups, eps)
        return [y, mean, rstd]

    @staticmethod
    def to_channels_last(x):
        return x.contiguous(memory_format=torch.channels_last)

    @staticmethod
    def to_contiguous_nchw(x):
        return x.contiguous()

    def groupnorm_backward(self, grad_y, z, conv_bias, gamma, mean, rstd, groups):
        with torch.enable_grad():
            leaves = [t.detach().requires_grad_() for t in (z, conv_bias, gamma, torch.zeros_like(gamma))]
            y, _ = self._normalised(*leaves, groups, self.eps)
            grad_z, grad_conv_bias, grad_gamma, grad_beta = torch.autograd.grad(y, leaves, grad_y)
        return [grad_z, grad_gamma, grad_beta, grad_conv_bias]

    @staticmethod
    def convt_fused_conv_backward(grad_z, x, weight, padding, input_grad, weight_grad):
        grad_x, grad_weight, _ = torch.ops.aten.convolution_backward(
            grad_z, x, weight, None, [1, 1], padding, [1, 1], True, [0, 0], 1, [input_grad, weight_grad, False])
        return [grad_x.contiguous() if input_grad else None, grad_weight if weight_grad else None]

    def groupnorm_backward_channels_last(self, grad_y, z, conv_bias, gamma, mean, rstd, groups):
        grad_z, *rest = self.groupnorm_backward(grad_y, z, conv_bias, gamma, mean, rstd, groups)
        return [grad_z.contiguous(memory_format=torch.channels_last), *rest]


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


@pytest.mark.parametrize("init, shape, fused", [
    ((8, 12, 3, 1, 1, 4), (2, 8, 5, 6), True),      # stride 1: the fused path
    ((6, 8, 2, 1, 1, 2), (1, 6, 4, 3), True),       # kernel 2, batch 1
    ((8, 12, 3, 2, 1, 4), (2, 8, 5, 6), False),     # stride 2: the exact mode's path
])
@pytest.mark.parametrize("tf32", [True, False])
def test_fused_model_equals_the_reference(monkeypatch, init, shape, fused, tf32):
    extension = FakeExtension()
    solution = load(emit("convt-gelu-groupnorm", {"conv": "fused"})[0], monkeypatch, extension)
    reference = reference_module()
    monkeypatch.setattr(torch.backends.cudnn, "allow_tf32", tf32)
    torch.manual_seed(3)
    ref = reference.Model(*init).double()
    torch.manual_seed(3)
    new = solution.ModelNew(*init).double()
    with torch.no_grad():  # a conv bias and GroupNorm affine far from their initial values
        for model in (ref, new):
            torch.manual_seed(4)
            for p in (model.conv_transpose.bias, model.group_norm.weight, model.group_norm.bias):
                p.normal_(0.5, 0.5)
    x = torch.rand(shape, dtype=torch.float64)
    dy = torch.randn(ref(x).shape, dtype=torch.float64)
    got, want = run(new, x, dy), run(ref, x, dy)
    for name, a, b in zip(["output", "input grad"] + [n for n, _ in new.named_parameters()], got, want):
        torch.testing.assert_close(a, b, atol=1e-10, rtol=1e-10, msg=name)
    taken = fused and tf32
    assert extension.calls == {"convt_fused_forward": int(taken), "groupnorm_forward": int(not taken)}
