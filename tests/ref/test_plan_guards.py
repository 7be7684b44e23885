"""`kgen emit --ref`: what the traced graph does not show is refused with a one-line error (kgen/ref/guards.py):
autocast switched on inside forward, in-place writes to a model input or a parameter / buffer; autograd switched off
inside forward is planned, what it made read detached (CPU only)."""
import re

import pytest

from kgen.ref.plan import make_plan
from kgen.ref.trace import RefError, load_reference
from tests.ref.test_plan import FLATTENED, pytorch_ops, regions


def plan_of(tmp_path, source):
    path = tmp_path / "guarded.py"
    path.write_text(source)
    return make_plan(load_reference(path))


@pytest.mark.parametrize("body", [
    "with torch.autocast('cpu', dtype=torch.bfloat16):\n            g = x @ x\n        return g.float()",
    "with torch.autocast('cuda', dtype=torch.float16):\n            g = x @ x\n        return g.float()",
])
def test_autocast_switched_inside_forward_is_refused(tmp_path, body):
    """fx runs the context manager while tracing but records nothing: planned as traced, ModelNew would compute those
    ops in float32 where the reference casts them."""
    with pytest.raises(RefError, match=r"runs with autocast switched .*: kgen cannot plan it"):
        plan_of(tmp_path, FLATTENED.format(tail="x").replace("return x", body))


@pytest.mark.parametrize("body", [
    "with torch.no_grad():\n            g = torch.sigmoid(x) * 2\n        return x * g",
    "with torch.inference_mode():\n            g = torch.sigmoid(x)\n        return x * g.clone()",
    "with torch.set_grad_enabled(False):\n            g = torch.sigmoid(x)\n        return x * g",
    "with torch.no_grad():\n            g = torch.sigmoid(x)\n        return g",
])
def test_autograd_switched_off_inside_forward_detaches_what_it_made(tmp_path, body):
    """What forward computes with autograd off carries no gradient in the reference: the plan reads it detached where
    ops made with autograd on read it (or forward returns it), and computes the reference's value."""
    path = tmp_path / "guarded.py"
    path.write_text(FLATTENED.format(tail="x").replace("return x", body))
    plan = make_plan(load_reference(path))
    assert any(s.node.op == "call_method" and s.node.target == "detach" for s in pytorch_ops(plan))
    from tests.ref.plan_interpreter import assert_plan_computes_the_references_value
    assert_plan_computes_the_references_value(path)


def test_an_in_place_write_with_autograd_off_on_a_tensor_made_with_it_on_is_refused(tmp_path):
    """The reference's gradient passes such a write as the identity (autograd never saw it): no plan of values gives
    that."""
    body = "y = x * 2\n        with torch.no_grad():\n            y.clamp_(0, 1)\n        return x * y"
    with pytest.raises(RefError, match=r"in-place `clamp_` with autograd off on a tensor made with it on"):
        plan_of(tmp_path, FLATTENED.format(tail="x").replace("return x", body))


def test_autograd_left_on_plans_as_before(tmp_path):
    body = "with torch.enable_grad():\n            g = torch.sigmoid(x)\n        return x * g"
    (region,) = regions(plan_of(tmp_path, FLATTENED.format(tail="x").replace("return x", body)))
    assert [n.op for n in region.epilogue] == ["sigmoid", "mul"]


@pytest.mark.parametrize("line, what", [
    ("x.mul_(0.5)", "mul_` writes the model input `x`"),
    ("x += 1", "+=` writes the model input `x`"),
    ("torch.relu_(x)", "relu_` writes the model input `x`"),
    ("F.relu(x, inplace=True)", "relu` writes the model input `x`"),
    ("x.contiguous().clamp_(0, 1)", "clamp_` writes the model input `x`"),
    ("self.act(x)", "act` writes the model input `x`"),
])
def test_an_in_place_write_outside_forward_is_refused(tmp_path, line, what):
    """The reference changes a tensor its caller sees (a harness runs ModelNew on the inputs the reference ran on);
    kgen plans values, not writes."""
    source = FLATTENED.format(tail="x").replace("x = self.gn(self.conv(x))", line + "\n        x = self.gn(self.conv(x))")
    source = source.replace("self.avg = nn.AdaptiveAvgPool2d(1)", "self.act = nn.ReLU(inplace=True)\n"
                            "        self.register_buffer('buf', torch.ones(16))")
    with pytest.raises(RefError, match=re.escape(f"in-place `{what}")):
        plan_of(tmp_path, source)


def test_an_in_place_write_to_a_value_forward_made_plans_by_value(tmp_path):
    source = FLATTENED.format(tail="x").replace("x = self.gn(self.conv(x))",
                                                "x = x * 1.0\n        x.mul_(0.5)\n        x = self.gn(self.conv(x))")
    assert regions(plan_of(tmp_path, source))


@pytest.mark.parametrize("line", ["self.buf.mul_(0.9)", "self.buf += 1", "self.steps += 1", "self.gn.eps = self.gn.eps * 2"])
def test_a_forward_that_changes_the_model_is_refused(tmp_path, line):
    """A buffer is no proxy: its in-place op runs while fx traces, and the graph keeps one snapshot of a value the
    reference changes on every call (a number attribute likewise)."""
    source = FLATTENED.format(tail="x * self.buf.view(1, -1, 1, 1) * self.steps").replace(
        "x = self.gn(self.conv(x))", line + "\n        x = self.gn(self.conv(x))")
    source = source.replace("self.avg = nn.AdaptiveAvgPool2d(1)", "self.steps = 1\n"
                            "        self.register_buffer('buf', torch.ones(16))")
    with pytest.raises(RefError, match=r"Model.forward writes `self\.(buf|steps|gn\.eps)`, state of the model"):
        plan_of(tmp_path, source)


@pytest.mark.parametrize("line", ["x.zero_()", "x.fill_(0.5)", "x.copy_(x * 2)", "x.normal_()"])
def test_an_in_place_method_without_an_out_of_place_form_is_refused(tmp_path, line):
    """`zero_` is not `zero` in place of something: the error names the method, not a failed `Tensor.zero`."""
    source = FLATTENED.format(tail="x").replace("return x", "y = x * 1\n        y." + line[2:] + "\n        return y + x")
    with pytest.raises(RefError, match=re.escape(f"in-place `{line[2:].split('(')[0]}` has no out-of-place form")):
        plan_of(tmp_path, source)


@pytest.mark.parametrize("tail, refused", [
    ("(lambda y: (y.__iadd__(1), y.relu_(), y.mean(1))[2])(x.flatten(1))", False),   # the base is not read again
    ("(lambda y: (y.relu_(), y.mean(1) + x.mean((2, 3)))[1])(x.flatten(1))", True),  # x read after the write
    ("(lambda y: (y.relu_(), x.flatten(1).mean(1))[1])(x.flatten(1))", True),         # another view of x read after
])
def test_an_in_place_write_to_a_view_is_refused_only_where_another_name_reads_it_later(tmp_path, tail, refused):
    source = FLATTENED.format(tail=tail)
    if refused:
        with pytest.raises(RefError, match="on a tensor that has views"):
            plan_of(tmp_path, source)
    else:
        assert regions(plan_of(tmp_path, source))


def test_an_in_place_write_to_a_view_of_a_model_input_is_refused(tmp_path):
    source = FLATTENED.format(tail="x").replace("x = self.gn(self.conv(x))",
                                                "c = self.conv(x)\n        x.view(-1).mul_(2)\n        x = self.gn(c)")
    with pytest.raises(RefError, match="in-place `mul_` writes the model input `x`"):
        plan_of(tmp_path, source)
