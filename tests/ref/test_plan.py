"""`kgen emit --ref`: what the planner makes of every KernelBench GroupNorm problem and of our own
references, and its one-line errors (CPU only: nothing is built here)."""
import ast
import operator
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from kgen.ref.emit import emit_reference
from kgen.ref.graph import is_metadata
from kgen.ref.ir import BatchNormStep, LibraryStep, PointwiseStep, RegionStep
from kgen.ref.plan import make_plan
from kgen.ref.trace import RefError, load_reference

HERE = Path(__file__).parent
KERNELBENCH = HERE.parent.parent.parent / "shared" / "kernelbench" / "problems"
OWN = sorted((HERE / "references").glob("*.py"))
FAMILY = sorted(KERNELBENCH.glob("level*.py")) if KERNELBENCH.is_dir() else []
LONE = "a lone element-wise op, no fusion to gain"   # docs/decisions.md 35: it stays the reference's PyTorch call


def regions(plan):
    return [s for s in plan.steps if isinstance(s, RegionStep)]


def pytorch_ops(plan):
    return [s for s in plan.steps if isinstance(s, LibraryStep) and s.node.op != "get_attr" and not is_metadata(s.node)
            and getattr(s.node.target, "__name__", "") not in ("getattr", "tensor")]


@pytest.mark.skipif(not FAMILY, reason="../shared/kernelbench/problems is not beside this checkout")
@pytest.mark.parametrize("path", FAMILY, ids=lambda p: p.name[:20])
def test_every_groupnorm_is_fused_and_only_library_ops_stay(path):
    """Every problem has a region; PyTorch keeps its library modules and methods, and of the element-wise ops only
    those alone (no other element-wise op to fuse with: L2-75's bias add, after the region's min)."""
    plan = make_plan(load_reference(path))
    assert regions(plan), "no region"
    for step in pytorch_ops(plan):
        node = step.node
        if step.elementwise_fallback == LONE and node.op == "call_function":
            continue
        assert not step.elementwise_fallback, f"element-wise {node.name} stays in PyTorch: {step.elementwise_fallback}"
        assert node.op == "call_module" or node.op == "call_method", f"{node.name} stays in PyTorch"
        if node.op == "call_module":
            kind = type(dict(plan.ref.gm.named_modules())[node.target]).__name__
            assert kind.startswith(("Conv", "Linear", "BatchNorm", "Dropout", "MaxPool")), kind


EXPECTED = {
    "level2_19": ("kNone", "kSum", ["add", "gelu_erf"], []),
    "level2_21": ("kNone", "kSum", ["add", "add", "mul", "sigmoid"], []),
    "level2_23": ("kSample", "kMean", ["add"], []),
    "level2_27": ("kPlane", "kMean", ["add", "hardswish"], []),
    "level2_75": ("kChannel", "kMin", ["add"], []),
    "level2_85": ("kWindow", "kMax", ["add"], ["mul", "clamp"]),   # the clamp after the pool moved before it
    "level2_88": ("kNone", "kSum", ["add"], ["sigmoid", "mul", "mul", "sigmoid", "mul"]),
    "level2_92": ("kChannel", "kLogSumExp", ["add"], ["tanh", "hardswish", "add"]),
}


@pytest.mark.skipif(not FAMILY, reason="../shared/kernelbench/problems is not beside this checkout")
@pytest.mark.parametrize("key", sorted(EXPECTED))
def test_region_shapes(key):
    path = next(p for p in FAMILY if p.name.startswith(key + "_"))
    (region,) = regions(make_plan(load_reference(path)))
    kind, op, prologue, epilogue = EXPECTED[key]
    assert (region.reduce_kind, region.reduce_op) == (kind, op)
    assert [n.op for n in region.prologue] == prologue
    assert [n.op for n in region.epilogue] == epilogue
    # The conv / linear bias is peeled into the region (its first parameter) wherever the reference has one.
    assert region.params and region.params[0].label.endswith(".bias")


@pytest.mark.skipif(not FAMILY, reason="../shared/kernelbench/problems is not beside this checkout")
def test_broadcasting_add_after_a_reduction_is_a_kgen_kernel(tmp_path):
    """L2-75: min over channels (N, 1) + a (1, C, 1, 1) bias -> (1, C, N, 1). Alone, the add stays PyTorch's call;
    followed by a ReLU it is kgen's element-wise kernel reading the reduced tensor through broadcast strides, the
    bias per channel of the output."""
    path = next(p for p in FAMILY if p.name.startswith("level2_75_"))
    plan = make_plan(load_reference(path))
    assert not [s for s in plan.steps if isinstance(s, PointwiseStep)]
    assert [(s.node.name, s.elementwise_fallback) for s in plan.steps
            if isinstance(s, LibraryStep) and s.elementwise_fallback] == [("add", LONE)]
    relu = tmp_path / "l2_75_relu.py"
    relu.write_text(path.read_text().replace("x = x + self.bias", "x = torch.relu(x + self.bias)"))
    plan = make_plan(load_reference(relu))
    (step,) = [s for s in plan.steps if isinstance(s, PointwiseStep)]
    assert step.input_shapes == [[1024, 1]] and step.shape == [1, 8192, 1024, 1] and step.broadcast == step.inputs
    assert [n.op for n in step.nodes] == ["add", "relu"] and [p.label for p in step.params] == ["bias"]
    assert not [s for s in plan.steps if isinstance(s, LibraryStep) and s.elementwise_fallback]


@pytest.mark.parametrize("path", OWN, ids=lambda p: p.stem)
def test_own_references_plan(path):
    plan = make_plan(load_reference(path))
    assert regions(plan)
    for region in regions(plan):
        assert region.out_shape, region


def test_two_groupnorms_two_regions_and_residual_through_z():
    plan = make_plan(load_reference(HERE / "references" / "two_groupnorms.py"), faithful="none")
    first, second = regions(plan)
    assert [n.op for n in first.epilogue] == ["mul", "add", "silu"]
    # the residual reads the GroupNorm's input, which is the prologue's result (fc1's output plus its bias)
    residual = first.epilogue[1]
    assert {o.ref for o in residual.operands if o.is_value} == {first.epilogue[0].name,
                                                                       first.prologue[-1].name}
    assert not second.epilogue[0].consts and second.epilogue[0].op == "tanh"


def test_regions_of_a_convs_channel_pieces_take_a_slice_of_its_bias_each():
    """conv(x).split([48, 16], dim=1), each piece a region's input: each region adds its slice of the conv's bias
    (its first parameter, its prologue's first op), and the conv runs without it."""
    plan = make_plan(load_reference(HERE / "references" / "conv_split_two_groupnorms_gate.py"), faithful="none")
    library = {s.node.name: s for s in plan.steps if isinstance(s, LibraryStep)}
    assert library["conv"].drop_bias and library["conv"].bias_to == "regions 0 and 1, a slice each"
    slices = {r.input: r.params[0].expr for r in regions(plan)}
    assert slices == {"getitem": "self.conv.bias[0:48]", "getitem_1": "self.conv.bias[48:64]"}
    for region in regions(plan):
        assert region.prologue[0].op == "add" and region.prologue[0].operands[1].is_param


def test_a_convs_channel_piece_read_outside_a_region_keeps_the_bias_in_the_conv():
    """torch.chunk(conv(x), 2, dim=-2): one half a region's input, the other read by a mul: the conv keeps its bias
    and the region gives its slice back (no parameter, no prologue)."""
    plan = make_plan(load_reference(HERE / "references" / "conv1d_chunk_gate_one_norm.py"), faithful="none")
    library = {s.node.name: s for s in plan.steps if isinstance(s, LibraryStep)}
    (region,) = regions(plan)
    assert not library["conv"].drop_bias
    assert region.prologue == [] and region.params == []
    assert [n.op for n in region.epilogue] == ["tanh"] and region.epilogue[0].operands[0].ref == region.gn


def test_a_faithful_region_leaves_the_linear_its_bias():
    """fc2 (a Linear: TF32 under "high") reads gn1's region: faithful, so fc1 keeps its bias (one rounding in the GEMM,
    as the reference) and the region neither adds it nor takes it as a parameter; the residual reads fc1's output.
    gn2's region, read by nothing that rounds, still takes fc2's bias."""
    plan = make_plan(load_reference(HERE / "references" / "two_groupnorms.py"))
    first, second = regions(plan)
    assert first.faithful and not second.faithful
    library = {s.node.name: s for s in plan.steps if isinstance(s, LibraryStep)}
    assert not library[first.input].drop_bias and library[second.input].drop_bias
    assert first.prologue == [] and "fc1.bias" not in [p.label for p in first.params]
    assert [p.label for p in second.params][:1] == ["fc2.bias"] and second.prologue[0].op == "add"
    residual = first.epilogue[1]
    assert {o.ref for o in residual.operands if o.is_value} == {first.epilogue[0].name, first.input}
    for node in first.prologue + first.epilogue:   # the parameters re-indexed with the bias gone
        assert all(0 <= o.ref < len(first.params) for o in node.operands if o.is_param)


def test_affine_false_and_functional_groupnorm():
    plan = make_plan(load_reference(HERE / "references" / "conv1d_gn_noaffine_relu.py"))
    assert regions(plan)[0].affine is False
    plan = make_plan(load_reference(HERE / "references" / "functional_gn_swish_mean.py"))
    (region,) = regions(plan)
    assert region.gn_module is None and region.gn_args["weight"] == "self.weight"
    assert region.keepdim and region.reduce_kind == "kPlane"


def test_functional_groupnorm_with_weight_or_bias_alone():
    """F.group_norm with a weight and no bias (or the reverse) is affine: the kernels take both, the missing one
    its identity value made beside the given one."""
    for name, weight, bias in (("fgn_weight_only_no_bias", "self.w", "torch.zeros_like(self.w)"),
                               ("fgn_bias_only_no_weight", "torch.ones_like(self.b)", "self.b")):
        (region,) = regions(make_plan(load_reference(HERE / "probe" / f"{name}.py")))
        assert region.affine and (region.gn_args["weight"], region.gn_args["bias"]) == (weight, bias)


def test_inplace_ops_are_planned_by_value():
    """nn.ReLU(inplace=True) overwrites the GroupNorm output, so the add after it reads relu twice; `+=` and
    `.mul_()` become the out-of-place ops whose results the later code reads."""
    (region,) = regions(make_plan(load_reference(HERE / "references" / "inplace_ops_alias.py")))
    assert [n.op for n in region.epilogue] == ["relu", "add", "add", "mul"]
    relu, add = region.epilogue[0], region.epilogue[1]
    assert [o.ref for o in add.operands if o.is_value] == [relu.name, relu.name]


def test_groupnorm_input_read_again_after_it_joins_the_prologue(tmp_path):
    """z = gelu(fc(x)) feeds the GroupNorm and a residual after it: the prologue takes z (with the peeled bias)
    and the residual reads z in the epilogue. Where z (there gelu(fc(x)) * 2) is also read by a library op, the
    prologue stops before z: the element-wise GELU and its * 2 become their own kernel and the region reads its
    output; the add of the region's output and the library op's (with the scale before it), then a ReLU, is a kgen
    element-wise kernel of two tensors."""
    (region,) = regions(make_plan(load_reference(HERE / "references" / "linear_gelu_tanh_gn_short_slices.py")))
    assert [n.op for n in region.prologue] == ["add", "gelu_tanh"]
    assert [n.op for n in region.epilogue] == ["mul", "add"]
    residual = region.epilogue[1]
    assert {o.ref for o in residual.operands if o.is_value} == {region.epilogue[0].name,
                                                                       region.prologue[-1].name}
    text = (HERE / "references" / "linear_gelu_tanh_gn_short_slices.py").read_text()
    other = tmp_path / "z_read_by_a_linear.py"
    other.write_text(text.replace("self.scale = nn.Parameter(torch.randn(hidden) * 0.1 + 1)",
                                  "self.scale = nn.Parameter(torch.randn(hidden) * 0.1 + 1)\n"
                                  "        self.head = nn.Linear(hidden, hidden)")
                         .replace('h = F.gelu(self.fc(x), approximate="tanh")',
                                  'h = F.gelu(self.fc(x), approximate="tanh") * 2.0')
                         .replace("return self.gn(h) * self.scale + h",
                                  "return torch.relu(self.gn(h) * self.scale + self.head(h))"))
    plan = make_plan(load_reference(other))
    (region,) = regions(plan)
    assert not region.prologue
    gelu, residual = [s for s in plan.steps if isinstance(s, PointwiseStep)]
    assert [n.op for n in gelu.nodes] == ["gelu_tanh", "mul"] and region.input == gelu.output
    assert [n.op for n in region.epilogue] == ["mul"]
    assert [n.op for n in residual.nodes] == ["add", "relu"] and len(residual.inputs) == 2 and not residual.broadcast
    assert residual.inputs == [region.output, "head"]
    assert not [s for s in plan.steps if isinstance(s, LibraryStep) and s.elementwise_fallback]


# A conv and a GroupNorm, then `tail` (the pooling modules for the global pooling tests).
FLATTENED = """
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 16, 3)
        self.gn = nn.GroupNorm(4, 16)
        self.avg = nn.AdaptiveAvgPool2d(1)
        self.max = nn.AdaptiveMaxPool2d((1, 1))

    def forward(self, x):
        x = self.gn(self.conv(x))
        return {tail}


def get_inputs():
    return [torch.rand(4, 3, 16, 16)]


def get_init_inputs():
    return []
"""


@pytest.mark.parametrize("tail, op, keepdim, rank", [
    ("x.view(x.size(0), -1).mean(1)", "kMean", False, 2),
    ("x.reshape(x.shape[0], -1).sum(dim=-1, keepdim=True)", "kSum", True, 2),
    ("torch.flatten(x, 1).logsumexp(1)", "kLogSumExp", False, 2),
    ("torch.max(x.flatten(1), dim=1)[0]", "kMax", False, 2),
])
def test_reduction_through_a_flattening_view(tmp_path, tail, op, keepdim, rank):
    """A reduction over all but the batch written through a view that flattens it is the region's kSample
    reduction; the view (and x.size(0) / x.shape feeding it) stays out of PyTorch's part of the plan."""
    path = tmp_path / "flattened.py"
    path.write_text(FLATTENED.format(tail=tail))
    plan = make_plan(load_reference(path))
    (region,) = regions(plan)
    assert (region.reduce_kind, region.reduce_op, region.keepdim, region.reduce_rank) == ("kSample", op, keepdim, rank)
    left = [s.node.target for s in pytorch_ops(plan) if s.node.op != "call_module" and not
            (s.node.target is operator.getitem and is_metadata(s.node.args[0]))]   # x.shape[0]: dead code
    assert left == [], left   # only the conv (its bias peeled) stays in PyTorch
    _, _, lines = emit_reference(str(path))
    assert any("over all but the batch" in line for line in lines)


@pytest.mark.parametrize("tail, kind, op", [
    ("torch.max(x, dim=1, keepdim=True).values", "kChannel", "kMax"),
    ("x.min(1)[0]", "kChannel", "kMin"),
    ("torch.max(x.flatten(1), dim=1).values", "kSample", "kMax"),
])
def test_max_min_values_in_either_spelling(tmp_path, tail, kind, op):
    """torch.max / torch.min over a dim return (values, indices): `[0]` and `.values` both take the values, and both
    fuse into the region (the (values, indices) node claimed with them); nothing but the conv stays in PyTorch."""
    path = tmp_path / "values.py"
    path.write_text(FLATTENED.format(tail=tail))
    (region,) = regions(plan := make_plan(load_reference(path)))
    assert (region.reduce_kind, region.reduce_op) == (kind, op)
    assert [s.node.op for s in pytorch_ops(plan)] == ["call_module"], [s.node.target for s in pytorch_ops(plan)]


@pytest.mark.parametrize("tail, op", [
    ("self.avg(x)", "kMean"),
    ("self.max(x)", "kMax"),
    ("F.adaptive_avg_pool2d(x, (1, 1)).flatten(1)", "kMean"),
    ("F.adaptive_max_pool2d(x, output_size=1)", "kMax"),
    ("F.adaptive_avg_pool2d(x, 2)", None),
    ("F.adaptive_max_pool2d(x, 1, return_indices=True)[0]", None),
    ("F.adaptive_avg_pool2d(x, (1, None))", None),
])
def test_global_pooling_is_the_mean_or_max_over_the_spatial_dims(tmp_path, tail, op):
    """Adaptive pooling to size 1 (module or functional) is the region's kPlane reduction with keepdim; other
    output sizes, and max pooling that returns its indices, run in PyTorch (the region ends at the GroupNorm)."""
    path = tmp_path / "global_pool.py"
    path.write_text(FLATTENED.format(tail=tail))
    (region,) = regions(make_plan(load_reference(path)))
    if op is None:
        assert region.reduce_kind == "kNone"
    else:
        assert (region.reduce_kind, region.reduce_op, region.keepdim) == ("kPlane", op, True)


def test_max_with_its_indices_used_stays_in_pytorch(tmp_path):
    """`.indices` (or [1]) read: PyTorch's max runs; the region ends at the GroupNorm."""
    path = tmp_path / "indices.py"
    path.write_text(FLATTENED.format(tail="torch.max(x, dim=1).indices.float() + torch.max(x, dim=1).values"))
    (region,) = regions(make_plan(load_reference(path)))
    assert region.reduce_kind == "kNone"


def test_reduction_through_a_view_of_the_plane():
    """x.view(N, C, -1).mean(-1) flattens only the spatial dims: the plane mean, reduce_rank 3 (keepdim gives
    (N, C, 1)); over dim 1 of that view (channels) and through a view that splits the channels stay out."""
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "spatial.py"
        for tail, kind in (("x.view(x.size(0), x.size(1), -1).mean(-1)", "kPlane"),
                           ("x.flatten(2).amax(2, keepdim=True)", "kPlane"),
                           ("x.reshape(x.size(0), x.size(1), -1).sum((1, 2))", "kSample"),
                           ("x.view(x.size(0), x.size(1), -1).mean(1)", "kNone"),
                           ("x.view(x.size(0), 4, -1).mean(-1)", "kNone")):
            path.write_text(FLATTENED.format(tail=tail))
            (region,) = regions(make_plan(load_reference(path)))
            assert region.reduce_kind == kind, tail
            assert region.reduce_rank == (3 if kind != "kNone" else 0)


def test_activation_zoo_is_one_region_with_module_constants_checked():
    """ELU (module, alpha), x ** 2, SELU, CELU (alpha), Softsign, LogSigmoid, Tanhshrink, Threshold (module:
    threshold, value), rsqrt and reciprocal: all fused, the module constants baked in and checked at __init__."""
    plan = make_plan(load_reference(HERE / "references" / "conv_activation_zoo_gn.py"))
    (region,) = regions(plan)
    assert [n.op for n in region.prologue] == ["add", "elu", "pow"]
    assert {"selu", "celu", "softsign", "logsigmoid", "tanhshrink", "threshold", "rsqrt", "reciprocal"} <= \
        {n.op for n in region.epilogue}
    assert next(n for n in region.prologue if n.op == "pow").consts == {"p": 2.0}
    text = emit_reference(str(HERE / "references" / "conv_activation_zoo_gn.py"))[0]
    assert "'elu.alpha': 0.7, 'threshold.threshold': 0.1, 'threshold.value': -0.5" in text
    assert "kgen::eluf(z, 1.3f, 1.f, 1.f / 1.3f)" in text   # celu(h): h is z, the GroupNorm's input


def test_where_with_its_comparison_is_fused_and_falls_back_whole(tmp_path):
    """torch.where(y > 0, y, y * 0.1): the comparison folds into the where (one op, `a > b ? c : d`, no gradient
    to the comparison's sides) inside the region. A condition read twice (the where and a float cast) stays
    PyTorch's, comparison and where both, and the file says so."""
    plan = make_plan(load_reference(HERE / "references" / "conv3d_gn_where_mean.py"))
    (region,) = regions(plan)
    where = region.epilogue[-1]
    assert where.op == "where_gt" and where.folded and region.reduce_kind == "kPlane"
    assert not any(isinstance(s, LibraryStep) and s.node.name == where.folded for s in plan.steps)
    text = emit_reference(str(HERE / "references" / "conv3d_gn_where_mean.py"))[0]
    assert "(v_clamp > 0.0f ? v_clamp : v_mul)" in text and "* (0.f)" not in text
    twice = tmp_path / "condition_read_twice.py"
    twice.write_text((HERE / "references" / "conv3d_gn_where_mean.py").read_text().replace(
        "return torch.where(y > 0, y, y * 0.1).mean(dim=[2, 3, 4], keepdim=True)",
        "m = y > 0\n        return torch.where(m, y, y * 0.1) + m.float()"))
    plan = make_plan(load_reference(twice))
    fallbacks = {s.node.name: s.elementwise_fallback for s in plan.steps
                 if isinstance(s, LibraryStep) and s.elementwise_fallback}
    assert "comparison" in fallbacks["gt"] and "condition" in fallbacks["where"]
    text = emit_reference(str(twice))[0]
    assert "gt = clamp > 0" in text and "where = torch.where(gt, clamp, mul)" in text


def test_functional_pools_are_windows_where_kernel_equals_stride(tmp_path):
    """F.avg_pool2d(x, 2) after the GroupNorm is the region's window reduction, its window a constant of the
    file; F.max_pool2d with a stride other than its kernel stays PyTorch's."""
    source = (HERE / "references" / "conv2d_gn_functional_pool.py").read_text()
    (region,) = regions(make_plan(load_reference(HERE / "references" / "conv2d_gn_functional_pool.py")))
    assert (region.reduce_kind, region.reduce_op, tuple(region.window)) == ("kWindow", "kMean", (2, 2))
    assert "(2, 2)" in region.window_expr
    text = emit_reference(str(HERE / "references" / "conv2d_gn_functional_pool.py"))[0]
    assert "avg_pool2d = _ext.region0(" in text and ", (2, 2), " in text
    overlapping = tmp_path / "overlapping_max_pool.py"
    overlapping.write_text(source.replace("F.avg_pool2d(x, 2)", "F.max_pool2d(x, 3, stride=2)"))
    plan = make_plan(load_reference(overlapping))
    (region,) = regions(plan)
    assert region.reduce_kind == "kNone" and not region.window
    assert any(s.node.target is F.max_pool2d for s in pytorch_ops(plan))


def test_clamp_like_ops_after_a_max_or_min_move_before_it(tmp_path):
    """Hardtanh, ReLU and clamp after a max / min reduction (over windows or channels) join the region's epilogue,
    before the reduction, and the region's output is the last of them; an op that does not commute exactly
    (sigmoid: ties after rounding; minimum with a scalar: 1/2 at a tie), one after a mean, or one whose reduced
    input is read elsewhere too stays out of the region: an element-wise kernel, or, alone, PyTorch's call."""
    own = HERE / "references" / "gn_maxpool_hardtanh_relu.py"
    (region,) = regions(make_plan(load_reference(own)))
    assert [n.op for n in region.epilogue] == ["hardtanh", "relu"] and region.result == region.epilogue[-1].name
    assert (region.reduce_kind, region.reduce_op, region.output) == ("kWindow", "kMax", "relu")
    assert region.notes == ["hardtanh (act) moved before the max, which it commutes with",
                            "relu moved before the max, which it commutes with"]
    text = emit_reference(str(own))[0]
    assert "relu = _ext.region0(" in text and "_Pointwise" not in text
    (region,) = regions(make_plan(load_reference(HERE / "references" / "gn_channel_min_clamp.py")))
    assert [n.op for n in region.epilogue] == ["silu", "clamp"] and region.reduce_op == "kMin"
    assert region.output == "clamp" and region.epilogue[-1].consts == {"lo": -0.2, "hi": 0.1}

    source = own.read_text()
    for old, new, kernel, lone in (("nn.MaxPool2d(2)", "nn.AvgPool2d(2)", ["hardtanh", "relu"], []),
                                   ("return F.relu(self.act(x))", "return F.relu(self.act(x)) + x",
                                    ["hardtanh", "relu", "add"], []),
                                   ("return F.relu(self.act(x))", "return torch.sigmoid(x)", None, ["sigmoid"]),
                                   ("return F.relu(self.act(x))", "return torch.minimum(x, torch.tensor(0.5))", None,
                                    ["minimum"])):
        variant = tmp_path / "variant.py"
        variant.write_text(source.replace(old, new))
        plan = make_plan(load_reference(variant))
        (region,) = regions(plan)
        assert region.epilogue == [] and region.output == "pool" and not region.notes, new
        kernels = [[n.op for n in s.nodes] for s in plan.steps if isinstance(s, PointwiseStep)]
        assert kernels == ([kernel] if kernel else []), new
        assert [s.node.name for s in plan.steps if isinstance(s, LibraryStep) and s.elementwise_fallback == LONE] \
            == lone, new


def batch_norms(plan):
    return [s for s in plan.steps if isinstance(s, BatchNormStep)]


@pytest.mark.skipif(not FAMILY, reason="../shared/kernelbench/problems is not beside this checkout")
def test_training_batch_norm_with_its_chain_and_pool_is_one_kgen_step():
    """L2-11: the BatchNorm, the Tanh and the MaxPool2d after it are one kgen step (the conv's bias peeled into
    it); nothing of them stays in PyTorch."""
    path = next(p for p in FAMILY if p.name.startswith("level2_11_"))
    plan = make_plan(load_reference(path))
    (bn,) = batch_norms(plan)
    assert [n.op for n in bn.nodes] == ["tanh"]
    assert (bn.pool_op, tuple(bn.window), bn.conv_bias) == ("kMax", (2, 2), "self.conv_transpose.bias")
    kept = [type(dict(plan.ref.gm.named_modules())[s.node.target]).__name__ for s in pytorch_ops(plan)]
    assert kept == ["ConvTranspose2d"]
    assert [s.drop_bias for s in pytorch_ops(plan)] == [True]
    (region,) = regions(plan)
    assert region.input == bn.output


def test_batch_norm_dag_with_a_parameter_and_a_mean_pool(tmp_path):
    """x * sigmoid(x) * scale after a BatchNorm3d is a DAG, not a chain: it joins whole, the scale a parameter of
    the step; where the DAG's value is read elsewhere too, it is the step's output and the pooling is PyTorch's."""
    path = HERE / "references" / "conv3d_bn_silu_scale_avgpool_gn.py"
    (bn,) = batch_norms(make_plan(load_reference(path)))
    assert [n.op for n in bn.nodes] == ["sigmoid", "mul", "mul"]
    assert [p.label for p in bn.params] == ["scale"] and bn.pool_op == "kMean"
    text = emit_reference(str(path))[0]
    assert "pool = _call(_BatchNorm0, conv, self.bn.weight, self.bn.bias, *_batch_norm_mode(self.bn), " in text
    shared = tmp_path / "shared_value.py"
    shared.write_text(path.read_text().replace("return self.gn(self.pool(y))", "return self.gn(self.pool(y)) + y.mean()"))
    plan = make_plan(load_reference(shared))
    (bn,) = batch_norms(plan)
    assert [n.op for n in bn.nodes] == ["sigmoid", "mul", "mul"] and not bn.pool_op
    assert any(s.node.target == "pool" for s in pytorch_ops(plan))


def pointwise(plan):
    return [s for s in plan.steps if isinstance(s, PointwiseStep)]


def forward_lines(text: str) -> list[str]:
    body = text.split("    def forward(self", 2)[-1].split("\n\n", 1)[0]
    return [line.strip() for line in body.splitlines()[1:]]


def test_elementwise_of_values_from_different_kernels_is_a_kgen_kernel(tmp_path):
    """A squeeze-excite gate and a residual of the model's input: g * s + x reads the region's output, a
    (N, C, 1, 1) gate and the model's input; relu(y - y.mean(1, keepdim=True)) reads y and its channel mean. Each
    is one kgen element-wise kernel over the tensors (the broadcast ones named), none is PyTorch's, and each runs
    after every tensor it reads is computed. (The reference's own lone subtraction would stay PyTorch's call.)"""
    path = tmp_path / "gate_residual_centred_relu.py"
    path.write_text((HERE / "references" / "conv2d_gn_input_residual_gate.py").read_text().replace(
        "return y - y.mean(dim=1, keepdim=True)", "return torch.relu(y - y.mean(dim=1, keepdim=True))"))
    plan = make_plan(load_reference(path))
    (region,) = regions(plan)
    assert [n.op for n in region.epilogue] == ["relu"] and region.reduce_kind == "kNone"
    gate, residual, centred = pointwise(plan)
    assert [n.op for n in gate.nodes] == ["add", "sigmoid"] and [p.label for p in gate.params] == ["gate"]
    assert gate.shape == [8, 32, 1, 1] and not gate.broadcast
    assert [n.op for n in residual.nodes] == ["mul", "add"]
    assert residual.inputs == ["x", region.output, gate.output] and residual.broadcast == [gate.output]
    assert [n.op for n in centred.nodes] == ["sub", "relu"] and centred.inputs[0] == residual.output
    assert centred.input_shapes[1] == [8, 1, 24, 24] and centred.broadcast == [centred.inputs[1]]
    assert not [s for s in plan.steps if isinstance(s, LibraryStep) and s.elementwise_fallback]
    assert [p.node.target for p in pytorch_ops(plan)] == ["conv", "mean", "mean"]
    lines = forward_lines(emit_reference(str(path))[0])
    defined = {line.split(" = ", 1)[0]: i for i, line in enumerate(lines)}
    for step in pointwise(plan):
        call = defined[step.output]
        assert lines[call].startswith(f"{step.output} = _ext.pointwise{step.index}([{', '.join(step.inputs)}], [")
        assert all(defined.get(name, -1) < call for name in step.inputs)


def test_elementwise_kernels_on_rank_2_and_rank_1_tensors():
    """h * sigmoid(x) + x on (N, F) Linear outputs (sigmoid(x) read only there joins the kernel), and tanh(s) * 0.5
    on the (N,) sum: kernels of two tensors and of one, ranks 2 and 1."""
    plan = make_plan(load_reference(HERE / "references" / "linear_gn_input_gate_rank1.py"))
    gated, tail = pointwise(plan)
    assert [n.op for n in gated.nodes] == ["sigmoid", "mul", "add"] and gated.inputs == ["x", "silu"]
    assert gated.shape == [64, 256] and not gated.broadcast
    assert [n.op for n in tail.nodes] == ["tanh", "mul"] and tail.shape == [64] and tail.input_shapes == [[64]]


FIVE_TENSORS = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gn = nn.GroupNorm(2, 8)

    def forward(self, x, a, b, c, d):
        return {body}


def get_inputs():
    return [torch.rand(2, 8, 4, 4) for _ in range(5)]


def get_init_inputs():
    return []
"""


def test_an_elementwise_kernel_reads_at_most_four_tensors(tmp_path):
    """gn(x) + 2 * a + b + c + d reads five tensors: the last three adds are one kernel of four (the first add's
    value, b, c, d), the first add with the 2 * a before it another of two."""
    path = tmp_path / "five.py"
    path.write_text(FIVE_TENSORS.format(body="self.gn(x) + 2 * a + b + c + d"))
    plan = make_plan(load_reference(path))
    first, rest = pointwise(plan)
    assert [n.op for n in first.nodes] == ["mul", "add"] and first.inputs == ["a", "gn"]
    assert len(rest.nodes) == 3 and rest.inputs == ["b", "c", "d", first.output]   # graph order


def test_an_elementwise_kernel_reads_at_most_four_parameters(tmp_path):
    """A chain of five per-channel parameters on a tensor no region holds (2 * a their first operand): the kernel
    that ends it takes the last four, the first parameter's op (with the 2 * a) is a kernel of its own; none is
    left to PyTorch."""
    path = tmp_path / "five_params.py"
    source = FIVE_TENSORS.format(body="self.gn(x) + ((((2 * a * self.p0 + self.p1) * self.p2) + self.p3) * self.p4)")
    path.write_text(source.replace("self.gn = nn.GroupNorm(2, 8)", "self.gn = nn.GroupNorm(2, 8)\n" + "".join(
        f"        self.p{k} = nn.Parameter(torch.randn(8, 1, 1))\n" for k in range(5))))
    plan = make_plan(load_reference(path))
    first, rest = pointwise(plan)
    assert [p.label for p in first.params] == ["p0"] and len(rest.params) == 4 and first.output in rest.inputs
    assert [n.op for n in first.nodes] == ["mul", "mul"]
    assert not [s for s in plan.steps if isinstance(s, LibraryStep) and s.elementwise_fallback]


def test_an_elementwise_value_read_twice_inside_one_kernel(tmp_path):
    """t = a * gn(x); t * sigmoid(t): t is read twice, both times inside the kernel, so the DAG takes it whole;
    with t = sigmoid(a * gn(x)) also returned, (t + b) * 2 reads t as its own kernel's output."""
    path = tmp_path / "dag.py"
    path.write_text(FIVE_TENSORS.format(body="(lambda t: t * torch.sigmoid(t))(a * self.gn(x))"))
    (step,) = pointwise(make_plan(load_reference(path)))
    assert [n.op for n in step.nodes] == ["mul", "sigmoid", "mul"] and step.inputs == ["a", "gn"]
    path.write_text(FIVE_TENSORS.format(body="(lambda t: (t, (t + b) * 2.0))(torch.sigmoid(a * self.gn(x)))"))
    first, second = pointwise(make_plan(load_reference(path)))
    assert [n.op for n in first.nodes] == ["mul", "sigmoid"] and [n.op for n in second.nodes] == ["add", "mul"]
    assert second.inputs == ["b", first.output]


def run_emit(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "kgen.cli", "emit", *args], capture_output=True, text=True, cwd=cwd)


@pytest.mark.parametrize("name, words", [
    ("unsupported_wrapped_function.py", ["copy.copy", "return shallow(self.gn(x)) * 2", "another library"]),
    ("syntax_error.py", ["syntax error", ":6:"]),
    ("no_groupnorm.py", ["no GroupNorm"]),
    ("inplace_on_view.py", ["in-place `relu_`", "views", "x[:, :4].relu_()"]),
    ("inplace_through_identity_alias.py", ["in-place `relu_`", "may share its storage", "y.relu_()"]),
    # fx would trace the Function's forward (round) and lose its straight-through backward
    ("custom_autograd_function.py", ["custom torch.autograd.Function (`StraightThrough`)",
                                     "StraightThrough.apply(self.gn(x))"]),
    # the op's own message and source line, not fx's node dump and printed traceback
    ("input_shape_mismatch.py", ["`return torch.relu(self.gn(x))`", "input shapes failed: RuntimeError: Expected "
                                 "weight to be a vector of size equal to the number of channels"]),
    ("branch_on_tensor_values.py", ["`if y.sum() > 0:`", "data-dependent control flow", "torch.where"]),
    ("lazy_modules.py", ["`self.conv` (LazyConv2d) has no parameters until its first call", "in_channels"]),
    ("group_count_from_input.py", ["its group count is neither an int nor one worked out from the input shapes"]),
])
def test_bad_reference_one_line_exit_2_no_file(name, words, tmp_path):
    out = tmp_path / "solution.py"
    result = run_emit("--ref", str(HERE / "bad" / name), "-o", str(out))
    assert result.returncode == 2
    lines = [l for l in result.stderr.splitlines() if l.startswith("kgen: error:")]   # (and stage lines, if slow)
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    for word in words:
        assert word in lines[0]
    assert not out.exists()


def test_ref_and_spec_options_do_not_mix(tmp_path):
    result = run_emit("--ref", str(HERE / "references" / "two_groupnorms.py"), "--groups", "4")
    assert result.returncode == 2 and "--block-size, --conv and --forward only" in result.stderr
    result = run_emit("--explain")
    assert result.returncode == 2 and "--explain needs --ref" in result.stderr


def test_missing_reference_file_is_a_clear_error():
    with pytest.raises(RefError, match="no such file"):
        load_reference("/nonexistent/reference.py")


def test_emitted_file_names_its_reference_and_validate_finds_it(tmp_path):
    from kgen.validate.core import NoReference, resolve_reference

    reference = tmp_path / "ref.py"
    reference.write_text((HERE / "references" / "two_groupnorms.py").read_text())
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    for out in (a, b):
        result = run_emit("--ref", str(reference), "-o", str(out))
        assert result.returncode == 0, result.stderr
    assert a.read_bytes() == b.read_bytes()  # deterministic
    path, header = resolve_reference(a.read_text(), None, a)
    assert path == reference and header.spec == "ref"
    reference.write_text(reference.read_text() + "\n# edited\n")
    with pytest.raises(NoReference, match="changed since"):
        resolve_reference(a.read_text(), None, a)


def _emitted_function(text: str, name: str):
    """One top-level function of an emitted file, executed alone (importing the file would build it)."""
    tree = ast.parse(text)
    node = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name)
    namespace = {"torch": torch}
    exec(compile(ast.Module(body=[node], type_ignores=[]), "<emitted>", "exec"), namespace)
    return namespace[name]


def _clamp_grad(a: float, lo: float, hi: float, at_lo: int, at_hi: int) -> float:
    """kgen::clamp_grad (core/ops.cuh), line for line."""
    if lo < a < hi:
        return 1.0
    if a == lo and a <= hi:
        return float(at_lo)
    if a == hi and a >= lo:
        return float(at_hi)
    return 0.0


def test_clamp_gradient_on_its_bounds_follows_the_running_pytorch():
    """torch.clamp's gradient for a value exactly on a bound changed between PyTorch versions (2.11 passes it,
    2.15 does not): an emitted file asks its PyTorch and builds the derivative to match, which replayed here
    equals this PyTorch's own clamp gradient at, inside and outside both bounds."""
    text = emit_reference(str(HERE / "references" / "gn_clamp_bounds.py"))[0]
    flags = _emitted_function(text, "_clamp_gradient_flags")()
    at_lo, at_hi = (int(f.rsplit("=", 1)[1]) for f in flags)
    points = torch.tensor([-1.0, -0.25, -0.2, 0.0, 0.5, 0.75, 0.8, 2.0], requires_grad=True)
    for lo, hi in ((-0.25, 0.75), (-0.25, float("inf")), (float("-inf"), 0.75), (0.5, 0.5)):
        points.grad = None
        torch.clamp(points, None if lo == float("-inf") else lo, None if hi == float("inf") else hi).sum().backward()
        mine = [_clamp_grad(a, lo, hi, at_lo, at_hi) for a in points.tolist()]
        assert mine == points.grad.tolist(), (lo, hi, flags)


def test_max_pooling_after_non_decreasing_ops_takes_f_of_the_max():
    """The batch norm step's forward takes F(max y) over a max window only where F never decreases: tanh
    (L2-11) and relu chains, a positive scale; not x * sigmoid(x) (a DAG, and not monotone), nor a scale of
    unknown sign (a parameter), nor a negative one."""
    from kgen.ref.codegen import non_decreasing
    from kgen.ref.ir import Operand, PwNode

    def chain(*specs):
        nodes, last = [], "bn"
        for i, (op, extra, consts) in enumerate(specs):
            nodes.append(PwNode(f"n{i}", op, [Operand.of_value(last)] + extra, consts))
            last = f"n{i}"
        return nodes

    assert non_decreasing(chain(("tanh", [], {})))
    assert non_decreasing(chain(("relu", [], {}), ("mul", [Operand.of_scalar(2.0)], {}), ("sigmoid", [], {})))
    assert non_decreasing(chain(("leaky_relu", [], {"slope": 0.1}), ("sub", [Operand.of_scalar(1.0)], {})))
    assert not non_decreasing(chain(("mul", [Operand.of_scalar(-2.0)], {})))
    assert not non_decreasing(chain(("mul", [Operand.of_param(0)], {})))
    assert not non_decreasing(chain(("gelu_erf", [], {})))
    assert not non_decreasing([PwNode("s", "sigmoid", [Operand.of_value("bn")], {}),
                               PwNode("m", "mul", [Operand.of_value("bn"), Operand.of_value("s")], {})])
    (bn,) = batch_norms(make_plan(load_reference(HERE / "references" / "convt_bn_tanh_maxpool_gn_odd.py")))
    assert non_decreasing(bn.nodes)


def test_epilogue_says_whether_a_zero_gradient_gives_exact_zeros():
    """The generated epilogue's kZeroGradExact: true where no op's derivative can be infinite at a finite
    operand (a window max's first backward pass then reads only the windows' extremes), false with a division,
    log, exp, root or power among its ops (autograd's 0 * inf is NaN there)."""
    from kgen.ref.functors import epilogue_functor
    from kgen.ref.ir import Operand, PwNode

    def flag(*ops):
        nodes, last = [], "y"
        for i, op in enumerate(ops):
            extra = [Operand.of_scalar(2.0)] if op in ("mul", "div", "add") else []
            nodes.append(PwNode(f"n{i}", op, [Operand.of_value(last)] + extra, {}))
            last = f"n{i}"
        text, _ = epilogue_functor("E", [], nodes, "x", None, "y", last, [])
        (line,) = [ln for ln in text.splitlines() if "kZeroGradExact" in ln]
        return "= true;" in line

    assert flag("mul", "tanh", "hardswish", "add")
    assert flag("sigmoid", "mish", "gelu_erf")
    for unbounded in ("div", "log", "sqrt", "rsqrt", "reciprocal", "exp", "exp2", "expm1", "log1p"):
        assert not flag("mul", unbounded), unbounded
    # L2-85's epilogue (a per-channel scale before the max pool) takes the extremes-only pass.
    text = emit_reference(str(KERNELBENCH / "level2_85_Conv2d_GroupNorm_Scale_MaxPool_Clamp.py"))[0] \
        if FAMILY else ""
    assert not FAMILY or "static constexpr bool kZeroGradExact = true;  // true: dv = 0" in text


# ---------------------------------------------------------------- --conv fast (plan_layout.py)
SPEC_REFERENCES = HERE.parent.parent / "kgen" / "specs" / "references"


@pytest.mark.parametrize("path", [SPEC_REFERENCES / "level2_19_convtranspose2d_gelu_groupnorm.py",
                                  HERE / "references" / "conv2d_scale_sigmoid_gn_residual.py",
                                  HERE / "references" / "convt2d_gn_noaffine_tanh_residual.py",
                                  HERE / "references" / "convt3d_swish_gn_hardswish.py"], ids=lambda p: p.stem)
def test_conv_fast_runs_the_2d_conv_and_its_region_channels_last(path):
    plan = make_plan(load_reference(path), "fast")
    (region,) = regions(plan)
    conv = next(s for s in plan.steps if isinstance(s, LibraryStep) and s.node.name == region.input)
    assert region.channels_last and conv.channels_last
    (note,) = plan.notes   # the one note: the TF32 rounding cuDNN's channels-last algorithm may bring
    assert note.startswith("--conv fast: cuDNN picks its algorithm per layout") and "--no-tf32" in note
    text, notes, lines = emit_reference(str(path), conv="fast")
    assert notes == [note] and "(channels-last input)" in lines[1] and "channels-last" in lines[0]
    forward = text[text.index("    def forward(self"):]
    assert "_call(_ChannelsLastCopy, x)" in forward.split("\n")[1]
    assert "kgen::region_forward_nhwc<Region0Prologue" in text and "kgen::region_backward_nhwc<Region0Prologue" in text
    assert '"to_channels_last", "to_contiguous_nchw"' in text
    assert '# kgen-params: {"block_size": 256, "conv": "fast"}' in text and "--block-size 256 --conv fast" in text
    ast.parse(text)


def test_conv_exact_is_the_default_and_adds_nothing():
    path = SPEC_REFERENCES / "level2_19_convtranspose2d_gelu_groupnorm.py"
    assert emit_reference(str(path))[0] == emit_reference(str(path), conv="exact")[0]
    text = emit_reference(str(path))[0]
    for word in ("_ChannelsLastCopy", "to_channels_last", '"conv"'):
        assert word not in text
    assert not any(s.channels_last for s in make_plan(load_reference(path)).steps if hasattr(s, "channels_last"))
    # the region still reads a channels-last input as it lies, where a model runs channels-last
    assert "if (!faithful && kgen::region_nhwc::is_channels_last(x)) {" in text


@pytest.mark.parametrize("name, words", [
    ("conv1d_gn_noaffine_relu.py", ["region 0 reads its input in NCHW", "nn.Conv1d", "2-D and 3-D convolutions only"]),
    ("conv3d_gn_where_mean.py", ["region 0 reads its input in NCHW", "reduction"]),
    ("conv2d_gn_functional_pool.py", ["region 0 reads its input in NCHW", "reduction"]),
])
def test_conv_fast_says_why_a_region_stays_nchw(name, words):
    plan = make_plan(load_reference(HERE / "references" / name), "fast")
    assert not any(r.channels_last for r in regions(plan))
    assert len(plan.notes) == 2 and "nothing runs channels-last" in plan.notes[1]
    for word in words:
        assert word in plan.notes[0]
    text, notes, _ = emit_reference(str(HERE / "references" / name), conv="fast")
    assert notes == plan.notes and "_ChannelsLastCopy" not in text and "NOTE: --conv fast" in text


def test_conv_fast_on_the_command_line(tmp_path):
    path = HERE / "references" / "conv2d_scale_sigmoid_gn_residual.py"
    result = run_emit("--ref", str(path), "--conv", "fast", "--explain")
    assert result.returncode == 0 and "kgen region 0 (channels-last input)" in result.stdout
    result = run_emit("--ref", str(HERE / "references" / "conv3d_gn_where_mean.py"), "--conv", "fast", "--explain")
    assert result.returncode == 0 and "note: --conv fast: region 0 reads its input in NCHW" in result.stdout
    result = run_emit("--ref", str(path), "--conv", "sideways", "-o", str(tmp_path / "s.py"))
    assert result.returncode == 2 and "sideways" in result.stderr and not (tmp_path / "s.py").exists()
    with pytest.raises(ValueError, match="conv mode"):
        make_plan(load_reference(path), "sideways")


def test_a_parameter_only_a_dropped_epilogue_node_read_leaves_the_region(tmp_path):
    """Five (C, 1, 1) parameters after the GroupNorm, then a ReLU: the epilogue functor takes four, the fifth
    product and the ReLU run in an element-wise kernel. Its parameter was still handed to the region (and listed in
    its plan line) though no functor of the region reads it."""
    path = tmp_path / "five_params.py"
    path.write_text(FLATTENED.replace("self.max = nn.AdaptiveMaxPool2d((1, 1))", "self.max = nn.AdaptiveMaxPool2d((1, 1))\n"
                                      "        self.p = nn.ParameterList([nn.Parameter(torch.rand(16, 1, 1)) for _ in range(5)])")
                    .format(tail="torch.relu((((x * self.p[0]) + self.p[1]) * self.p[2] + self.p[3])"
                                 " * self.p[4])"))
    plan = make_plan(load_reference(path))
    (region,) = regions(plan)
    assert [p.label for p in region.params] == ["p.0", "p.1", "p.2", "p.3"]
    assert sorted(o.ref for n in region.epilogue for o in n.operands if o.is_param) == [0, 1, 2, 3]
    (pointwise,) = [s for s in plan.steps if isinstance(s, PointwiseStep)]
    assert [p.label for p in pointwise.params] == ["p.4"] and [n.op for n in pointwise.nodes] == ["mul", "relu"]
    assert "self.p[3], self.p[4])" not in emit_reference(str(path))[0]


PLAN_CHECKED = OWN + sorted((HERE / "probe").glob("*.py"))


@pytest.mark.parametrize("path", PLAN_CHECKED, ids=lambda p: p.stem[:40])
def test_every_plan_computes_the_references_value(path):
    """The plan run step by step with PyTorch's ops (tests/ref/plan_interpreter.py: a region as prologue, GroupNorm,
    epilogue and reduction; an element-wise step as its DAG; library steps as traced) equals the reference's forward
    in eval mode: the planner read every operand, constant, parameter, peeled bias and reduction as the reference
    means it. The kernels' own arithmetic is the GPU tests' to check."""
    from tests.ref.plan_interpreter import assert_plan_computes_the_references_value
    assert_plan_computes_the_references_value(path)


def test_get_inputs_that_put_tensors_on_the_gpu_plan_on_a_machine_without_one(tmp_path):
    """`.cuda()`, `.to("cuda")`, `device="cuda"` in get_inputs(): kgen reads shapes and dtypes on the meta device (this
    machine may have no GPU), and the file carries get_inputs() as written."""
    path = tmp_path / "model.py"
    path.write_text('''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gn = nn.GroupNorm(4, 16)

    def forward(self, x, y, z):
        return torch.relu(self.gn(x)) + y * z


def get_inputs():
    return [torch.randn(2, 16, 8, 8).cuda(), torch.randn(2, 16, 8, 8, device="cuda"),
            torch.rand(2, 16, 8, 8).to("cuda", torch.float32)]


def get_init_inputs():
    return []
''')
    text, _, lines = emit_reference(str(path))
    assert any(line.startswith("kgen region 0: GroupNorm -> relu") for line in lines), lines
    assert 'torch.randn(2, 16, 8, 8).cuda(), torch.randn(2, 16, 8, 8, device="cuda")' in text.replace("'", '"')
