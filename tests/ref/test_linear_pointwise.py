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
    text, _, _ = emit_reference(str(path))
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


def test_an_element_wise_step_adds_the_biases_of_the_convolutions_it_alone_reads(monkeypatch):
    """`skip(x) + conv2(h)`: PyTorch adds each conv's bias in a pass of its own after cuDNN's conv; the element-wise
    kernel that reads both outputs adds them (both convs run without their bias), values and gradients the reference's."""
    from pathlib import Path

    from kgen.ref.ir import LibraryStep, PointwiseStep
    from kgen.ref.plan import make_plan
    from kgen.ref.trace import load_reference
    from tests.ref.test_emitted_glue import check_emitted_python

    path = Path(__file__).parents[1] / "corpus" / "diffusion_resblock_tiny.py"
    plan = make_plan(load_reference(path))
    step, = [s for s in plan.steps if isinstance(s, PointwiseStep)]
    assert [p.expr for p in step.params] == ["self.conv2.bias", "self.skip.bias"]
    assert [n.op for n in step.nodes] == ["add", "add", "add"]
    assert {s.node.target for s in plan.steps if isinstance(s, LibraryStep) and s.drop_bias} == \
        {"conv1", "conv2", "skip"}
    check_emitted_python(path, emit_reference(str(path))[0], monkeypatch)


def test_a_convolutions_bias_an_element_wise_step_adds_is_the_convs_under_autocast(monkeypatch):
    """Under autocast the convolution (bias and all) runs in bfloat16, so the step that adds its bias reads it in
    bfloat16 (_conv_bias) and returns bfloat16 as the reference's sum does; a float32 bias would promote it."""
    from pathlib import Path

    from kgen.ref.plan import make_plan
    from kgen.ref.trace import load_reference
    from tests.ref.emulated_ext import emulated_ext
    from tests.ref.test_emitted_glue import _bias_after_convolutions, _run
    from tests.ref.test_emitted_python import load_emitted, load_reference_module

    path = Path(__file__).parents[1] / "corpus" / "diffusion_resblock_tiny.py"
    text = emit_reference(str(path))[0]
    assert "_conv_bias(self.conv2.bias, " in text
    solution = load_emitted(text, monkeypatch)
    solution._ext = emulated_ext(make_plan(load_reference(path)), solution)
    _bias_after_convolutions(monkeypatch)
    reference = load_reference_module(path)
    init = reference.get_init_inputs()
    torch.manual_seed(0)
    theirs = reference.Model(*init).eval()
    ours = solution.ModelNew(*init)
    ours.load_state_dict(theirs.state_dict())
    torch.manual_seed(1)
    inputs = reference.get_inputs()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        want = _run(theirs, inputs, seed=2)
        got = _run(ours, inputs, seed=2)
    assert want[0][1].dtype == torch.bfloat16
    for (what, g), (_, w) in zip(got, want):
        assert g.dtype == w.dtype, what
        error = float((g.double() - w.double()).norm() / w.double().norm())
        assert error < 1e-2, f"{what}: {error:.3g} from the reference's, relative to its norm"
