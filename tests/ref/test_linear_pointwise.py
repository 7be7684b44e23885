"""Element-wise steps that are signed sums of their inputs (add, sub, neg of tensors and numbers): their backward
is PyTorch's own (each input's gradient the output's times its share, summed back where it broadcasts), with no
kernel and nothing saved; every other step keeps its backward kernel. On the CPU: the shares, the emitted file's
text, and its backward run with the extension stubbed, against autograd on the reference's own ops."""
import types

import pytest
import torch
import torch.utils.cpp_extension

from kgen.ref.emit import emit_reference
from kgen.ref.functors import linear_gradients
from kgen.ref.ir import Operand, PwNode

a, b = Operand.of_value("a"), Operand.of_value("b")


def node(name, op, *operands):
    return PwNode(name, op, list(operands), {})


@pytest.mark.parametrize("nodes, shares", [
    ([node("y", "add", a, b)], [1.0, 1.0]),
    ([node("y", "sub", a, b)], [1.0, -1.0]),
    ([node("y", "add", a, a)], [2.0, 0.0]),
    ([node("d", "sub", a, b), node("n", "neg", Operand.of_value("d")), node("y", "add", Operand.of_value("n"), a)],
     [0.0, 1.0]),
    ([node("y", "add", a, Operand.of_scalar(1.0))], [1.0, 0.0]),
])
def test_shares_of_a_signed_sum(nodes, shares):
    assert linear_gradients(nodes, ["a", "b"], "y") == shares


@pytest.mark.parametrize("nodes", [
    [node("y", "mul", a, b)],
    [node("y", "add", a, Operand.of_param(0))],
    [node("s", "sigmoid", a), node("y", "add", Operand.of_value("s"), b)],
])
def test_anything_else_is_not_a_signed_sum(nodes):
    assert linear_gradients(nodes, ["a", "b"], "y") is None


REFERENCE = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.norm = nn.GroupNorm(2, channels)
        self.proj = nn.Linear(8, channels)

    def forward(self, x, t, skip):
        h = (x + 1.0) + self.proj(t)[:, :, None, None]   # two ops each: a lone one stays PyTorch's own call
        # (h returned too: a region would otherwise take the broadcast add into its prologue)
        return self.norm(h) - skip - 1.0, torch.sigmoid(skip) * 2.0, h
'''


def test_a_broadcast_add_and_a_residual_sub_have_pytorchs_backward(tmp_path, monkeypatch):
    path = tmp_path / "ref_linear.py"
    path.write_text(REFERENCE + '''

def get_inputs():
    return [torch.randn(2, 4, 3, 5), torch.randn(2, 8), torch.randn(2, 4, 3, 5)]


def get_init_inputs():
    return [4]
''')
    text, _, _ = emit_reference(str(path), autograd="python")   # the Functions' own backward
    assert text.count("LINEAR = ") == 2 and "LINEAR = [1.0, 1.0]" in text and "LINEAR = [-1.0, 1.0]" in text
    # the sigmoid step (element-wise 2) keeps its kernel backward; the two sums have none, bound or built
    assert "pointwise0_backward" not in text and "pointwise1_backward" not in text
    assert "pointwise2_backward" in text
    monkeypatch.setattr(torch.utils.cpp_extension, "load_inline", lambda **kwargs: types.SimpleNamespace())
    module = types.ModuleType("emitted_linear")
    exec(compile(text, "emitted_linear.py", "exec"), module.__dict__)
    steps = {tuple(step.LINEAR): step for step in (getattr(module, n) for n in dir(module) if n.startswith("_Pointwise"))
             if hasattr(step, "LINEAR")}
    grad = torch.randn(2, 4, 3, 5)
    cases = {(1.0, 1.0): [(2, 4, 3, 5), (2, 4, 1, 1)],    # (x + 1) + proj(t)[:, :, None, None]: the second summed back
             (-1.0, 1.0): [(2, 4, 3, 5), (2, 4, 3, 5)]}   # norm(h) - skip - 1, its inputs in the functor's order
    for shares, shapes in cases.items():
        ctx = types.SimpleNamespace(shapes=[torch.Size(s) for s in shapes], needs_input_grad=(True, True))
        got = steps[shares].backward(ctx, grad)
        want = [(grad * share).sum_to_size(shape) for share, shape in zip(shares, shapes)]
        assert len(got) == 2 and all(torch.equal(g, w) for g, w in zip(got, want))
        assert got[0] is grad or got[1] is grad   # a share of 1 hands the output's gradient on, as autograd's add
        ctx.needs_input_grad = (False, True)
        assert steps[shares].backward(ctx, grad)[0] is None
