"""`kgen emit --ref`: spellings that mean the same value plan as one (kgen/ref/rewrite.py), PReLU's weight as a
per-channel parameter, the shrinks, and reductions kgen does not fuse kept as PyTorch's calls (CPU only)."""
from pathlib import Path

import pytest
import torch

from kgen.ref.emit import emit_reference
from kgen.ref.ir import LibraryStep, PointwiseStep
from kgen.ref.plan import make_plan
from kgen.ref.trace import RefError, load_reference
from tests.ref.test_plan import FLATTENED, pytorch_ops, regions
from tests.ref.test_emitted_python import forward_source

HERE = Path(__file__).parent


def plan_of(tmp_path, tail):
    path = tmp_path / "spelling.py"
    path.write_text(FLATTENED.format(tail=tail))
    return make_plan(load_reference(path))


def test_prelu_weights_are_per_channel_parameters():
    """nn.PReLU(C) (a (C,) weight on dim 1) and F.prelu with a one-value weight: both fused, each weight a
    parameter of the region (its gradient summed by the kernels), the module call rewritten as torch.prelu."""
    path = HERE / "references" / "conv2d_prelu_gn_prelu_channels.py"
    (region,) = regions(plan := make_plan(load_reference(path)))
    assert [n.op for n in region.prologue] == ["add", "prelu"] and [n.op for n in region.epilogue] == ["prelu"]
    assert [(p.label, p.shape) for p in region.params] == [("conv.bias", (12,)), ("alpha", (1,)),
                                                           ("act.weight", (12,))]
    assert [s.node.op for s in pytorch_ops(plan)] == ["call_module"]   # the conv alone
    text = emit_reference(str(path))[0]
    assert "self.act.weight])" in text and "__fmul_rn(p0, y)" in text


def test_a_tensor_read_by_prelu_and_by_broadcasting_is_read_each_way(tmp_path):
    """A (C,) parameter that is PReLU's weight and also a broadcast operand (`x * w`, which broadcasts it over the
    LAST dim): PReLU gets a get_attr of its own, so the product is not mistaken for a per-channel one."""
    source = FLATTENED.format(tail="F.prelu(x, self.w) * self.w").replace(
        "self.max = nn.AdaptiveMaxPool2d((1, 1))", "self.max = nn.AdaptiveMaxPool2d((1, 1))\n"
        "        self.w = nn.Parameter(torch.linspace(0.1, 0.9, 14))").replace("nn.Conv2d(3, 16, 3)", "nn.Conv2d(3, 14, 3)")
    source = source.replace("nn.GroupNorm(4, 16)", "nn.GroupNorm(7, 14)")
    path = tmp_path / "shared_weight.py"
    path.write_text(source)
    plan = make_plan(load_reference(path))
    (region,) = regions(plan)
    assert [n.op for n in region.epilogue] == ["prelu"]   # the product reads w over the last dim (14 wide)
    assert not any(isinstance(s, PointwiseStep) and any(p.label == "w" for p in s.params) for s in plan.steps)


@pytest.mark.parametrize("tail", [
    "self.keep(x)", "x.contiguous()", "x.float()", "x.to(torch.float32)", "x.type(torch.float32)", "x.clone()",
    "torch.clone(x)", "F.dropout(x, 0.0)", "F.dropout(x, p=0.5, training=False)", "nn.functional.dropout2d(x, 0.0)",
])
def test_ops_that_return_their_operand_do_not_split_the_region(tmp_path, tail):
    """`tail` then a sigmoid: one region, GroupNorm -> sigmoid, nothing but the conv in PyTorch."""
    source = FLATTENED.replace("self.avg = nn.AdaptiveAvgPool2d(1)", "self.keep = nn.Identity()")
    path = tmp_path / "same_value.py"
    path.write_text(source.format(tail=f"torch.sigmoid({tail})"))
    (region,) = regions(plan := make_plan(load_reference(path)))
    assert [n.op for n in region.epilogue] == ["sigmoid"]
    assert [s.node.op for s in pytorch_ops(plan)] == ["call_module"], [s.node.target for s in pytorch_ops(plan)]


@pytest.mark.parametrize("tail", [
    "F.dropout(x, 0.25)", "F.dropout(x, 0.25, training=self.training)", "x.double().float()", "x.half()",
    "x.to(torch.float64, copy=True).float()",
])
def test_ops_that_change_the_value_stay(tmp_path, tail):
    """Dropout that draws random numbers (its training flag read as self.training) and casts to another dtype stay
    the reference's calls: the region ends at the GroupNorm."""
    (region,) = regions(plan_of(tmp_path, f"torch.sigmoid({tail})"))
    assert region.epilogue == []


def test_unused_unpacked_indices_do_not_block_the_reduction(tmp_path):
    """`values, indices = torch.max(x, dim=1)` with indices never read fuses as `[0]` does; the std over every
    element after it stays PyTorch's, the subtraction reading it (doubled: a lone op is PyTorch's call) is kgen's
    element-wise kernel."""
    original = (HERE / "references" / "gn_max_unpacked_std_library.py").read_text()
    source = original.replace("return values - values.std()", "return (values - values.std()) * 2.0")
    assert source != original
    (path := tmp_path / "unpacked.py").write_text(source)
    plan = make_plan(load_reference(path))
    (region,) = regions(plan)
    assert (region.reduce_kind, region.reduce_op) == ("kChannel", "kMax")
    stays = [s.node.target for s in pytorch_ops(plan) if s.node.op != "call_module"]
    assert stays == ["std"], stays
    (pointwise,) = [s for s in plan.steps if isinstance(s, PointwiseStep)]
    assert [n.op for n in pointwise.nodes] == ["sub", "mul"] and pointwise.broadcast == ["std"]


def test_shrinks_expit_and_same_value_ops_make_one_region():
    path = HERE / "references" / "gn_shrinks_expit_same_value_ops.py"
    (region,) = regions(plan := make_plan(load_reference(path)))
    assert [n.op for n in region.epilogue] == ["softshrink", "hardshrink", "sigmoid", "mul", "add"]
    assert [n.consts for n in region.epilogue[:2]] == [{"lambd": 0.3}, {"lambd": 0.2}]
    assert not [s for s in plan.steps if isinstance(s, LibraryStep) and s.node.op != "get_attr"]


@pytest.mark.parametrize("tail, function", [
    ("x / torch.norm(x, p='fro')", torch.norm), ("x.std(dim=1)", "std"), ("torch.var(x, dim=(2, 3))", torch.var),
    ("F.glu(x, dim=1)", torch.nn.functional.glu), ("torch.linalg.vector_norm(x, dim=1)", torch.linalg.vector_norm),
])
def test_reductions_kgen_does_not_fuse_stay_pytorch_calls(tmp_path, tail, function):
    """Deterministic reductions with no kgen kernel run as the reference runs them (no error, nothing dropped)."""
    plan = plan_of(tmp_path, tail)
    assert regions(plan)
    assert any(s.node.target == function for s in pytorch_ops(plan))


def test_parameters_read_through_order_keeping_views_are_region_parameters():
    """unsqueeze / view / None-indexing / reshape of a (C,) parameter: each a per-channel parameter of the region
    (the kernels read the parameter itself); nothing but the conv stays in PyTorch."""
    plan = make_plan(load_reference(HERE / "references" / "conv2d_gn_param_views.py"))
    (region,) = regions(plan)
    assert [n.op for n in region.prologue] == ["add", "mul"]
    assert [n.op for n in region.epilogue] == ["mul", "add", "maximum"]
    assert [(p.label, p.shape) for p in region.params] == [
        ("conv.bias", (12,)), ("scale", (12,)), ("gain", (12,)), ("shift", (12,)), ("floor", (12,))]
    assert not [s for s in plan.steps if isinstance(s, PointwiseStep)]


def _scaled_by_w(tmp_path, view):
    source = FLATTENED.format(tail=f"x * {view}").replace(
        "self.max = nn.AdaptiveMaxPool2d((1, 1))", "self.max = nn.AdaptiveMaxPool2d((1, 1))\n"
        "        self.w = nn.Parameter(torch.linspace(0.1, 0.9, 14))").replace("nn.Conv2d(3, 16, 3)", "nn.Conv2d(3, 14, 3)")
    path = tmp_path / "moved.py"
    path.write_text(source.replace("nn.GroupNorm(4, 16)", "nn.GroupNorm(7, 14)"))
    return path


@pytest.mark.parametrize("view", ["self.w.view(1, 1, 1, -1)", "self.w.flip(0).view(1, -1, 1, 1)"])
def test_views_that_move_or_reorder_a_parameter_are_not_per_channel(tmp_path, view):
    """A view that puts the parameter on the last dim (14 wide, as the channels) and a flip are not read as the
    region's per-channel parameter: the product runs elsewhere."""
    (region,) = regions(make_plan(load_reference(_scaled_by_w(tmp_path, view))))
    # the product runs elsewhere, or reads what PyTorch computed (the flipped copy: a per-channel tensor of its own)
    assert region.epilogue == [] or [p.value for p in region.params if p.value] == ["view"]
    assert "w" not in [p.label for p in region.params]


def test_a_per_channel_view_expanded_over_the_tensor_is_per_channel(tmp_path):
    """`w.view(1, -1, 1, 1).expand(N, C, H, W)` holds w's value at channel c wherever it is read: the region's
    per-channel parameter (rewrite.broadcast_operands), and the plan computes the reference's value."""
    path = _scaled_by_w(tmp_path, "self.w.view(1, -1, 1, 1).expand(4, 14, 14, 14)")
    (region,) = regions(make_plan(load_reference(path)))
    assert [n.op for n in region.epilogue] == ["mul"] and "w" in [p.label for p in region.params]
    from tests.ref.plan_interpreter import assert_plan_computes_the_references_value
    assert_plan_computes_the_references_value(path)


@pytest.mark.parametrize("value, ok", [("0.5", True), ("3", True), ("True", True), ("'mean'", False),
                                       ("float('inf')", False), ("[1, 2]", False)])
def test_a_python_number_among_the_inputs_is_emitted_as_it_is(tmp_path, value, ok):
    """get_inputs() returning a finite Python number beside the tensors (forward(x, scale)): the emitted
    get_inputs returns the same number and the op reading it stays PyTorch's; any other non-tensor input is a
    one-line error."""
    path = tmp_path / "number_input.py"
    path.write_text(FLATTENED.replace("def forward(self, x):", "def forward(self, x, s):").replace(
        "return [torch.rand(4, 3, 16, 16)]", f"return [torch.rand(4, 3, 16, 16), {value}]").format(
        tail="x * s" if ok else "x"))
    if not ok:
        with pytest.raises(RefError, match="get_inputs"):
            emit_reference(str(path))
        return
    text = emit_reference(str(path))[0]
    assert f"return [torch.rand(4, 3, 16, 16), {value}]" in text


def test_an_element_wise_kernel_broadcasts_a_parameter_as_the_reference_reads_it(tmp_path, monkeypatch):
    """A (C,) parameter read through w.view(1, -1, 1, 1), and PReLU's (C,) weight, in an element-wise kernel (after a
    softmax, which stays PyTorch's) on planes 5 x 7: the kernel is handed the parameter itself, and the output shape
    is (N, C, 5, 7), not a broadcast of (C,) against the last dim (which fails, 16 against 7)."""
    import types
    from tests.ref.test_emitted_python import load_emitted
    path = tmp_path / "pointwise_params.py"
    path.write_text(FLATTENED.replace("self.max = nn.AdaptiveMaxPool2d((1, 1))",
                                      "self.max = nn.AdaptiveMaxPool2d((1, 1))\n"
                                      "        self.w = nn.Parameter(torch.linspace(0.5, 1.5, 16))\n"
                                      "        self.act = nn.PReLU(16)").format(
        tail="self.act(torch.softmax(x, 1) * self.w.view(1, -1, 1, 1))").replace(
        "torch.rand(4, 3, 16, 16)", "torch.rand(4, 3, 7, 9)"))
    plan = make_plan(load_reference(path))
    (pointwise,) = [s for s in plan.steps if isinstance(s, PointwiseStep)]
    assert [n.op for n in pointwise.nodes] == ["mul", "prelu"]
    assert [(p.label, p.shape, p.read_rank) for p in pointwise.params] == [("w", (16,), 4), ("act.weight", (16,), 4)]
    solution = load_emitted(emit_reference(str(path), autograd="python")[0], monkeypatch)
    seen = {}

    def forward(inputs, params, rounding):
        seen["inputs"], seen["params"] = [tuple(t.shape) for t in inputs], [tuple(p.shape) for p in params]
        seen["rounding"] = rounding
        return torch.zeros(inputs[0].shape)
    solution._ext = types.SimpleNamespace(pointwise0_forward=forward)
    out = solution._Pointwise0.apply(torch.rand(4, 16, 5, 7), torch.rand(16), torch.rand(16))
    assert tuple(out.shape) == (4, 16, 5, 7)
    assert seen == {"inputs": [(4, 16, 5, 7)], "params": [(16,), (16,)], "rounding": 0}


PROBES = sorted((HERE / "probe").glob("*.py"))
OWN = sorted((HERE / "references").glob("*.py"))
KERNELBENCH = HERE.parent.parent.parent / "shared" / "kernelbench" / "problems"


@pytest.mark.parametrize("path", OWN + PROBES + sorted(KERNELBENCH.glob("level2_75_*.py")), ids=lambda p: p.stem[:40])
def test_every_element_wise_kernel_gives_the_traced_shape(path, monkeypatch):
    """Each element-wise step's autograd Function (--autograd python; the C++ node's shapes are checked against it on
    the GPU, tests/gpu/test_autograd_cpp.py), handed tensors of its inputs' traced shapes and its parameters (the
    kernel stubbed), returns the output shape the reference traced: broadcast inputs, 0-d ones, parameters
    that raise the rank and parameters read through views."""
    check_element_wise_shapes(path, monkeypatch)


@pytest.mark.skipif(not KERNELBENCH.is_dir(), reason="../shared/kernelbench/problems not present")
def test_a_parameter_that_raises_the_rank_gives_the_traced_shape(tmp_path, monkeypatch):
    """L2-75's (1, C, 1, 1) bias on its (N, 1) minimum over channels, in a kernel of two ops (L2-75's own bias add is
    a lone op: PyTorch's): the output (1, C, N, 1) as traced."""
    (source,) = [p.read_text() for p in KERNELBENCH.glob("level2_75_*.py")]
    changed = source.replace("x = x + self.bias", "x = (x + self.bias) * 2.0")
    assert changed != source
    path = tmp_path / "l2_75_bias_twice.py"
    path.write_text(changed)
    assert check_element_wise_shapes(path, monkeypatch) == 1


def check_element_wise_shapes(path, monkeypatch) -> int:
    """The element-wise steps of `path`'s plan checked as above; how many there were."""
    import types
    from tests.ref.test_emitted_python import load_emitted
    plan = make_plan(load_reference(path))
    steps = [s for s in plan.steps if isinstance(s, PointwiseStep)]
    if not steps:
        pytest.skip("no element-wise kernel in this plan")
    solution = load_emitted(emit_reference(str(path), autograd="python")[0], monkeypatch)
    model = plan.ref.model
    stubs = {f"pointwise{s.index}_forward": (lambda inputs, params, rounding: torch.zeros(inputs[0].shape))
             for s in steps}
    solution._ext = types.SimpleNamespace(**stubs)
    for step in steps:
        inputs = [torch.rand(shape) for shape in step.input_shapes]
        params = [eval(p.expr, {"self": model}) for p in step.params]
        out = getattr(solution, f"_Pointwise{step.index}").apply(*inputs, *params)
        assert list(out.shape) == list(step.shape), (step.index, step.input_shapes, [p.shape for p in step.params])
    return len(steps)


@pytest.mark.parametrize("tail, stays", [
    ("torch.div(x, 2.0, rounding_mode='floor')", "div"), ("x.div(2.0, rounding_mode='trunc')", "div"),
    ("torch.add(x, 1.0, alpha=2)", "add"), ("x.sub(1.0, alpha=0.5)", "sub"),
])
def test_binary_ops_with_other_arguments_stay_pytorch_calls(tmp_path, tail, stays):
    """A floor or trunc division, or an add / sub with alpha != 1, is not the plain op: it was fused as a / b (or
    a + b) with the keyword dropped; it now stays the reference's PyTorch call, and the file says why."""
    plan = plan_of(tmp_path, f"torch.sigmoid({tail})")
    (region,) = regions(plan)
    assert region.epilogue == []
    (step,) = [s for s in pytorch_ops(plan) if s.node.target in (stays, getattr(torch, stays))]
    assert "arguments" in step.elementwise_fallback
    text = emit_reference(str(tmp_path / "spelling.py"))[0]
    assert tail.split("(", 1)[1].rstrip(")").split(", ", 1)[1] in text


@pytest.mark.parametrize("tail, ops_expected", [
    ("torch.negative(torch.divide(torch.subtract(torch.multiply(x, 2.0), 0.5), 3.0))", ["mul", "sub", "div", "neg"]),
    ("x.multiply(2.0).subtract(0.5).divide(3.0).true_divide(2.0).negative().absolute()",
     ["mul", "sub", "div", "div", "neg", "abs"]),
    ("torch.absolute(torch.true_divide(x, 4.0))", ["div", "abs"]),
    ("torch.rsub(x, 3.0)", ["sub"]),
])
def test_pytorch_aliases_of_fused_ops_fuse(tmp_path, tail, ops_expected):
    """torch.multiply / subtract / divide / true_divide / negative / absolute (functions and methods) are the same
    kernels as mul / sub / div / neg / abs, and torch.rsub(a, b) is b - a: one region, nothing in PyTorch."""
    plan = plan_of(tmp_path, tail)
    (region,) = regions(plan)
    assert [n.op for n in region.epilogue] == ops_expected
    assert [s.node.op for s in pytorch_ops(plan)] == ["call_module"]
    if tail.startswith("torch.rsub"):
        assert "__fsub_rn(3.0f, " in emit_reference(str(tmp_path / "spelling.py"))[0]


@pytest.mark.parametrize("tail", ["x.masked_fill(x < 0, 0.1)", "torch.masked_fill(x, x < 0, 0.1)",
                                  "x.masked_fill(mask=x < 0, value=0.1)"])
def test_masked_fill_with_a_comparison_is_a_fused_where(tmp_path, tail):
    """x.masked_fill(a CMP b, v) is where(a CMP b, v, x): the comparison folds in (no library step for it), the fill
    value is the true branch."""
    plan = plan_of(tmp_path, f"torch.relu({tail})")
    (region,) = regions(plan)
    assert [n.op for n in region.epilogue] == ["where_lt", "relu"] and region.epilogue[0].folded
    assert [s.node.op for s in pytorch_ops(plan)] == ["call_module"]
    assert "(y < 0.0f ? 0.1f : y)" in emit_reference(str(tmp_path / "spelling.py"))[0]


def test_masked_fill_with_another_mask_stays_pytorch(tmp_path):
    """A mask that is not a comparison read once (here read twice) leaves masked_fill to PyTorch, not an error."""
    plan = plan_of(tmp_path, "x.masked_fill((m := x < 0), 0.0) + m.float()")
    assert any(s.node.target == "masked_fill" and s.elementwise_fallback for s in pytorch_ops(plan))


@pytest.mark.parametrize("tail, stays", [
    ("torch.sign(x) * 0.5", torch.sign), ("torch.relu(x) // 0.5", "floordiv"), ("2 ** x", "pow"),
    ("x.floor() + 1.0", "floor"),
])
def test_element_wise_ops_without_a_kernel_formula_stay_pytorch_calls(tmp_path, tail, stays):
    """sign, floor, a floor division of a tensor, a number to a tensor power: no exit 2, the reference's own call
    (operators written as operators: `2 ** gn`), kgen's kernels around it."""
    plan = plan_of(tmp_path, tail)
    assert regions(plan)
    (step,) = [s for s in pytorch_ops(plan) if s.node.target == stays or
               getattr(s.node.target, "__name__", "") == stays]
    assert step.elementwise_fallback
    text = emit_reference(str(tmp_path / "spelling.py"))[0]
    assert "_operator" not in text


@pytest.mark.parametrize("tail, ops_expected", [
    ("torch.relu_(x) * 2.0", ["relu", "mul"]), ("F.relu_(x) + x", ["relu", "add"]),
    ("(torch.sigmoid_(x), x * 2.0)[1]", ["sigmoid", "mul"]),
    ("(F.elu_(x, 0.5), torch.clamp_(x, min=-0.25), F.leaky_relu_(x, 0.1), F.hardtanh_(x, -0.5, 0.5), x)[4]",
     ["elu", "clamp", "leaky_relu", "hardtanh"]),
])
def test_in_place_functions_are_planned_by_value(tmp_path, tail, ops_expected):
    """torch.relu_ / F.relu_ / F.elu_ / torch.clamp_ / torch.sigmoid_...: the function writes its operand, so every
    later read of the operand reads its result (as x.relu_() and F.relu(x, inplace=True) already were). They made
    `emit` exit 2 (`kgen cannot plan relu_`)."""
    plan = plan_of(tmp_path, tail)
    (region,) = regions(plan)
    assert [n.op for n in region.epilogue] == ops_expected
    assert [n.consts for n in region.epilogue if n.consts][:1] in ([], [{"alpha": 0.5}])
    assert [s.node.op for s in pytorch_ops(plan)] == ["call_module"]
    if tail.startswith("F.relu_"):   # relu(x) + relu(x): the add reads the written operand twice
        text = emit_reference(str(tmp_path / "spelling.py"))[0]
        assert "__fadd_rn(v_relu_, v_relu_)" in text


@pytest.mark.parametrize("tail, op, fill", [
    ("torch.where(x > 0, x, torch.zeros_like(x))", "where_gt", 0.0),
    ("torch.maximum(x, torch.full_like(x, 0.1))", "maximum", 0.1),
    ("torch.minimum(torch.ones_like(x), x)", "minimum", 1.0),
])
def test_a_tensor_filled_like_another_is_its_number(tmp_path, tail, op, fill):
    """torch.zeros_like / ones_like / full_like beside a tensor of its shape is the number it holds: the op fuses
    (it made emit exit 2, `kgen cannot plan zeros_like`), and the like-tensor's call, read by nothing, is gone."""
    plan = plan_of(tmp_path, tail)
    (region,) = regions(plan)
    assert [n.op for n in region.epilogue] == [op]
    assert [o.ref for o in region.epilogue[0].operands if o.is_scalar][-1] == fill
    text = emit_reference(str(tmp_path / "spelling.py"))[0]
    assert "_like(" not in forward_source(text)


def test_a_tensor_filled_like_another_is_read_as_a_tensor_where_it_sets_the_shape(tmp_path):
    """maximum((N, 1, H, W) mean, zeros_like(x) of (N, C, H, W)) * 2 (two ops: a lone one is PyTorch's call): the
    zeros set the output's shape, so they stay a tensor, made like the region's input (their values are never read:
    the region's value is no second output)."""
    plan = plan_of(tmp_path, "torch.maximum(x.mean(1, keepdim=True), torch.zeros_like(x)) * 2.0")
    (pointwise,) = [s for s in plan.steps if isinstance(s, PointwiseStep)]
    assert [n.op for n in pointwise.nodes] == ["maximum", "mul"]
    assert pointwise.inputs == ["mean", "zeros_like"] and pointwise.shape == [4, 16, 14, 14]
    assert "zeros_like = torch.zeros_like(conv)" in forward_source(emit_reference(str(tmp_path / "spelling.py"))[0])


def test_an_element_wise_op_on_parameters_alone_is_a_kgen_kernel(tmp_path):
    """torch.sigmoid of a doubled (1, C, 1, 1) gate (which the planner reads as a per-channel parameter; two ops, as
    a lone one is PyTorch's call): an element-wise kernel with the gate as its input tensor. It made emit exit 2
    (`kgen cannot plan sigmoid`)."""
    source = FLATTENED.replace("self.max = nn.AdaptiveMaxPool2d((1, 1))", "self.max = nn.AdaptiveMaxPool2d((1, 1))\n"
                               "        self.gate = nn.Parameter(torch.rand(1, 16, 1, 1))")
    path = tmp_path / "gate.py"
    path.write_text(source.format(tail="x * torch.sigmoid(self.gate * 2.0).expand_as(x)"))
    plan = make_plan(load_reference(path))
    first = next(s for s in plan.steps if isinstance(s, PointwiseStep))
    assert [n.op for n in first.nodes] == ["mul", "sigmoid"]
    assert first.inputs == ["gate"] and first.shape == [1, 16, 1, 1]
    assert "sigmoid = _ext.pointwise0([gate], [])" in emit_reference(str(path))[0]


def test_a_groupnorm_of_a_float64_tensor_is_pytorchs(tmp_path):
    """kgen's region kernels read float32, float16 and bfloat16: a GroupNorm of a float64 tensor was planned as a
    region and the emitted file failed at its first call. It is PyTorch's module call beside a float32 region, and a
    reference with no GroupNorm kgen's kernels read is a one-line error."""
    source = FLATTENED.replace("self.max = nn.AdaptiveMaxPool2d((1, 1))", "self.max = nn.AdaptiveMaxPool2d((1, 1))\n"
                               "        self.gn64 = nn.GroupNorm(2, 16).double()")
    path = tmp_path / "float64.py"
    path.write_text(source.format(tail="torch.sigmoid(self.gn64(x.double()).float()) * torch.relu(x)"))
    plan = make_plan(load_reference(path))
    (region,) = regions(plan)
    assert region.gn_module == "gn" and region.epilogue == []   # x is read twice: relu is the element-wise kernel
    (gn64,) = [s for s in pytorch_ops(plan) if s.node.target == "gn64"]
    assert "not float32" in gn64.elementwise_fallback
    only = tmp_path / "only_float64.py"
    only.write_text(FLATTENED.replace("nn.GroupNorm(4, 16)", "nn.GroupNorm(4, 16).double()").format(
        tail="x").replace("x = self.gn(self.conv(x))", "x = self.gn(self.conv(x).double())"))
    with pytest.raises(RefError, match="no GroupNorm of a float32, float16 or bfloat16 tensor"):
        make_plan(load_reference(only))


@pytest.mark.parametrize("tail, kind, keepdim", [
    ("torch.sum(x, axis=(2, 3), keepdims=True)", "kPlane", True), ("x.mean(axis=1)", "kChannel", False),
    ("torch.amax(x, axis=[1, 2, 3], keepdims=False)", "kSample", False),
])
def test_reductions_spelled_with_numpys_keywords_fuse(tmp_path, tail, kind, keepdim):
    """`axis=` and `keepdims=` (PyTorch's NumPy aliases of dim and keepdim) fuse as dim= and keepdim= do; the
    reduction stayed PyTorch's."""
    (region,) = regions(plan := plan_of(tmp_path, tail))
    assert (region.reduce_kind, region.keepdim) == (kind, keepdim)
    assert [s.node.op for s in pytorch_ops(plan)] == ["call_module"]


def test_a_where_of_a_bool_tensor_says_why_it_stays(tmp_path):
    """torch.where(mask, y, 0) with a bool mask from get_inputs(): PyTorch's where, and its note names the case."""
    path = tmp_path / "mask.py"
    path.write_text(FLATTENED.replace("def forward(self, x):", "def forward(self, x, m):").replace(
        "return [torch.rand(4, 3, 16, 16)]", "return [torch.rand(4, 3, 16, 16), torch.rand(4, 16, 14, 14) > 0.5]")
        .format(tail="torch.where(m, x, 0.0)"))
    (where,) = [s for s in pytorch_ops(make_plan(load_reference(path))) if s.node.target is torch.where]
    assert "bool tensor" in where.elementwise_fallback


def test_a_reader_of_the_convs_shape_alone_does_not_keep_its_bias(tmp_path):
    """maximum(c, zeros_like(c)) before the GroupNorm: zeros_like reads only c's shape, so the conv's bias is still
    the region's (it stayed in the conv, the region one parameter short)."""
    path = tmp_path / "shape_reader.py"
    path.write_text(FLATTENED.replace("x = self.gn(self.conv(x))", "c = self.conv(x)\n"
                                      "        x = self.gn(torch.maximum(c, torch.zeros_like(c)))").format(tail="x"))
    (region,) = regions(make_plan(load_reference(path)))
    assert [n.op for n in region.prologue] == ["add", "maximum"] and region.params[0].label == "conv.bias"


def test_an_in_place_function_on_a_view_names_the_function(tmp_path):
    """The one-line error names `relu_`, not `<built-in method relu_ of type object at 0x...>`."""
    with pytest.raises(RefError, match=r"in-place `relu_` on a tensor that has views"):
        plan_of(tmp_path, "(torch.relu_(x[:, :4]), x)[1]")


@pytest.mark.parametrize("tail, epilogue, kind", [
    ("F.hardswish(x.permute(0, 2, 3, 1) * 2.0).amax(-1)", ["mul", "hardswish"], "kChannel"),
    ("torch.relu(torch.transpose(x, 1, 3)).mean(dim=(1, 2))", ["relu"], "kPlane"),
    ("(x.transpose(1, 2) - 0.5).sigmoid().sum(dim=(1, 2, 3))", ["sub", "sigmoid"], "kSample"),
    ("torch.tanh(x.flatten(1)) + 1", ["tanh", "add"], "kNone"),
    ("torch.tanh(x.permute(0, 2, 3, 1)).mean(1)", ["tanh"], "kNone"),        # over H alone: PyTorch's
    ("torch.tanh(x.permute(0, 3, 2, 1)).amax(-1)", ["tanh"], "kNone"),       # keeps (N, W, H): not x's order
    ("torch.tanh(x.permute(0, 2, 3, 1)).amax(-1, keepdim=True)", ["tanh"], "kNone"),
])
def test_number_ops_after_a_layout_op_join_the_region(tmp_path, tail, epilogue, kind):
    """An element-wise op of numbers only after a permute / transpose / flatten of the region's value moves before
    it into the epilogue (rewrite.elementwise_before_layout); a reduction through a permute whose kept dims stay
    in x's order is the region's reduction over the dims of x they are (plan_reductions.permuted_reduction)."""
    plan = plan_of(tmp_path, tail)
    (region,) = regions(plan)
    assert [n.op for n in region.epilogue] == epilogue and region.reduce_kind == kind
    assert not [s for s in plan.steps if isinstance(s, PointwiseStep)]


def test_ops_with_a_tensor_operand_or_before_the_region_stay_after_the_layout_op(tmp_path):
    """A product and a sum with tensors after the permute stay an element-wise kernel after it; a relu of a
    transposed input (no region value before the transpose) stays in the region's prologue, after the transpose."""
    plan = plan_of(tmp_path, "x.permute(0, 2, 3, 1) * torch.linspace(0, 1, 16) + torch.linspace(1, 2, 16)")
    assert [n.op for s in plan.steps if isinstance(s, PointwiseStep) for n in s.nodes] == ["mul", "add"]
    path = HERE / "probe" / "transposed_input_gn.py"
    source = path.read_text().replace("self.gn(x.transpose(1, 2))", "self.gn(torch.relu(x.transpose(1, 2)))")
    assert source != path.read_text()
    (tmp_path / "t.py").write_text(source)
    (region,) = regions(make_plan(load_reference(tmp_path / "t.py")))
    assert [n.op for n in region.prologue] == ["relu"]


@pytest.mark.parametrize("tail, op", [("torch.relu(x).sum()", "kSum"), ("torch.mean(x * 2.0)", "kMean"),
                                      ("torch.relu(x).flatten(1).sum()", "kSum"), ("torch.relu(x).max()", None)])
def test_a_reduction_over_every_element_is_fused_per_sample(tmp_path, tail, op):
    """x.sum() / torch.mean(x): the region reduces all but the batch, PyTorch the N values left; a max over every
    element stays PyTorch's whole (its gradient at ties across samples)."""
    plan = plan_of(tmp_path, tail)
    (region,) = regions(plan)
    assert region.reduce_kind == ("kSample" if op else "kNone")
    if op:
        assert region.reduce_op == op
        (after,) = [s.node for s in pytorch_ops(plan) if s.node.op == "call_function"]
        assert after.args[0].name == region.output and len(after.args) == 1


EXPANDED = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 12)
        self.norm = nn.GroupNorm(4, 12)

    def forward(self, z, x):
        t = self.proj(z)[:, :, None, None]
        return torch.sigmoid(self.norm({operand}))


def get_inputs():
    return [torch.randn(2, 8), torch.randn(2, 12, 5, 7)]


def get_init_inputs():
    return []
'''


@pytest.mark.parametrize("operand", [
    "x + t.expand(-1, -1, 5, 7)", "t.expand_as(x) + x", "x * torch.broadcast_to(t, x.shape)",
    "x - t.repeat(1, 1, 5, 7)", "torch.maximum(t.expand(2, 12, 5, 7), x)",
])
def test_an_explicit_broadcast_is_read_as_the_tensor_it_repeats(tmp_path, operand):
    """`x + t.expand(...)` (a time embedding expanded over the plane by hand) is `x + t`: the region's prologue reads
    the per-(sample, channel) t, no full-size operand made first."""
    path = tmp_path / "expanded.py"
    path.write_text(EXPANDED.format(operand=operand))
    plan = make_plan(load_reference(path))
    (region,) = regions(plan)
    assert len(region.prologue) == 1 and region.prologue[0].op in ("add", "sub", "mul", "maximum")
    assert not any(s.node.op == "call_method" and s.node.target in ("expand", "expand_as", "repeat")
                   for s in pytorch_ops(plan))
    from tests.ref.plan_interpreter import assert_plan_computes_the_references_value
    assert_plan_computes_the_references_value(path)


@pytest.mark.parametrize("operand", [
    "t.expand(-1, -1, 5, 7) * t.expand(-1, -1, 5, 7) + x",   # the broadcast alone sets the product's shape
    "x + t.repeat(1, 2, 5, 7)[:, :12]",                      # a repeat of a dim of size 12: other values
    "x.half() + t.sum().expand(2, 12, 5, 7)",                # a 0-dim float32 expanded widens x to float32
])
def test_a_broadcast_that_sets_the_shape_stays(tmp_path, operand):
    path = tmp_path / "expanded.py"
    path.write_text(EXPANDED.format(operand=operand))
    from tests.ref.plan_interpreter import assert_plan_computes_the_references_value
    assert_plan_computes_the_references_value(path)
    assert any(s.node.op == "call_method" and s.node.target in ("expand", "repeat") for s in pytorch_ops(make_plan(
        load_reference(path))))
    if "half" in operand:   # the sum the region reads is float32, as the reference's
        assert load_reference(path).gm.graph.find_nodes(op="call_method", target="expand")
