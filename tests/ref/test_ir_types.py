"""The typed pieces of kgen/ref's IR (issue 45): operand kinds, the conv mode, the element-wise call `recognise` makes,
the op table's templates, and forward's statements, whose liveness decides what forward writes (CPU only)."""
import string
from pathlib import Path

import pytest
import torch
import torch.fx
import torch.nn.functional as F

from kgen.ref import op_calls, ops
from kgen.ref.forward_writer import Statement, live_statements
from kgen.ref.functors import DagWriter
from kgen.ref.ir import ConvMode, Operand, OperandKind, PwNode, RegionStep
from kgen.ref.plan import make_plan
from kgen.ref.trace import load_reference

HERE = Path(__file__).parent


def test_operands_are_built_and_tested_by_kind():
    value, param, scalar = Operand.of_value("x"), Operand.of_param(2), Operand.of_scalar(0.5)
    assert (value.kind, param.kind, scalar.kind) == (OperandKind.VALUE, OperandKind.PARAM, OperandKind.SCALAR)
    assert value.is_value and not value.is_param and not value.is_scalar
    assert param.is_param and param.ref == 2 and scalar.is_scalar and scalar.ref == 0.5
    assert [kind.value for kind in OperandKind] == ["value", "param", "scalar"]   # the words plan dumps use


def test_conv_mode_takes_the_command_line_word_or_a_member():
    assert ConvMode.of("fast") is ConvMode.FAST and ConvMode.of(ConvMode.EXACT) is ConvMode.EXACT
    assert ConvMode.of("fused") is ConvMode.FUSED
    with pytest.raises(ValueError, match="conv mode must be one of exact, fast, fused, got 'quick'"):
        ConvMode.of("quick")
    ref = load_reference(HERE / "references" / "conv2d_gn_param_views.py")
    assert make_plan(ref).conv is ConvMode.EXACT
    by_word, by_member = make_plan(ref, "fast"), make_plan(ref, ConvMode.FAST)
    assert by_word.conv is by_member.conv is ConvMode.FAST
    assert [s.channels_last for s in by_word.steps if isinstance(s, RegionStep)] == \
        [s.channels_last for s in by_member.steps if isinstance(s, RegionStep)]


def _node(function, *args, **kwargs):
    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    return graph.call_function(function, (x,) + args, kwargs), x


def test_recognise_gives_an_elementwise_call():
    node, x = _node(F.leaky_relu, 0.2)
    call = op_calls.recognise(node)
    assert call == op_calls.ElementwiseCall("leaky_relu", (x,), {"slope": 0.2})
    assert isinstance(call.operands, tuple) and isinstance(call.consts["slope"], float)
    node, x = _node(torch.clamp_min, 1)
    assert op_calls.recognise(node) == op_calls.ElementwiseCall("clamp", (x,), {"lo": 1.0, "hi": op_calls.INF})
    node, _ = _node(torch.clamp, torch.fx.Graph().placeholder("lo"))   # a tensor bound: no constant
    assert op_calls.recognise(node) is None


def test_every_op_template_names_its_operands_result_and_constants_only():
    """Each value and derivative template of the op table fills in as a format string: operands {a}..{d} within the
    op's arity, {r}, and named constants (what the quoted PyTorch formula names)."""
    for op in ops.OPS.values():
        constants = {f for _, f, _, _ in string.Formatter().parse(op.torch) if f}
        operands = set("abcd"[:op.arity])
        for template in (op.value,) + op.grads:
            fields = {f for _, f, _, _ in string.Formatter().parse(template) if f}
            assert fields <= operands | {"r"} | constants, (op.name, template)
        assert {f for _, f, _, _ in string.Formatter().parse(op.value) if f} >= operands, op.name


def test_dag_writer_fills_a_where_template():
    node = PwNode("w", ops.where_op("gt"), [Operand.of_value("y"), Operand.of_scalar(0.0), Operand.of_value("y"),
                                              Operand.of_param(1)], {})
    writer = DagWriter([node], {"y": "y"}, {1: 0})
    assert writer.expression(ops.OPS[node.op].value, node) == "(y > 0.0f ? y : p0)"
    assert ops.where_op("gt") in ops.WHERE_OPS and "add" not in ops.WHERE_OPS


def test_forward_writes_only_the_statements_the_return_needs():
    statements = [Statement("d", frozenset({"x"}), "d = x.device"),              # read by nothing
                  Statement("s", frozenset({"x"}), "s = x.size(0)"),             # read by v, which is dead
                  Statement("v", frozenset({"s"}), "v = s * 2"),
                  Statement("y", frozenset({"x"}), "y = self.conv(x)"),
                  Statement("z", frozenset({"y"}), "z = _Region0.apply(y)"),
                  Statement(None, frozenset({"z", "y"}), "return z, y")]
    assert [s.text for s in live_statements(statements)] == ["y = self.conv(x)", "z = _Region0.apply(y)",
                                                             "return z, y"]


SLICE_BOUND = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)
        self.gn = nn.GroupNorm(2, 8)

    def forward(self, x):
        y = torch.relu(self.gn(self.conv(x)))
        d = y.device
        n = y.size(1) // 2
        return y[:, :n] * 2.0


def get_inputs():
    return [torch.randn(2, 3, 10, 10)]


def get_init_inputs():
    return []
'''


def test_a_size_read_as_a_slice_bound_is_written_and_an_unread_value_is_not(tmp_path):
    """forward keeps `floordiv`, read only as a slice's bound, and the size it is computed from; `y.device`, read by
    nothing, is never written."""
    from kgen.ref.codegen import solution_context

    path = tmp_path / "slice_bound.py"
    path.write_text(SLICE_BOUND)
    lines = solution_context(make_plan(load_reference(path)))["forward_lines"]
    assert lines[2:] == ["size = relu.size(1)", "floordiv = size // 2",
                         "getitem = relu[(slice(None, None, None), slice(None, floordiv, None))]",
                         "mul = getitem * 2.0", "return mul"]   # a lone op: the reference's own
    assert not any(".device" in line for line in lines)


def test_an_operand_kind_is_never_a_bare_word():
    with pytest.raises(TypeError, match="OperandKind"):
        Operand("value", "x")


def test_an_attribute_is_read_as_a_whole_word():
    from kgen.ref.codegen import reads_attribute

    assert reads_attribute("y = x * self.k", "k") and reads_attribute("self.k", "k")
    assert not reads_attribute("y = x * self.k2", "k") and not reads_attribute("y = myself.k", "k")
    assert reads_attribute("y = myself.k + self.k", "k") and not reads_attribute("", "k")
