"""`kgen emit --ref`'s errors in the user's terms: `path:LINE: `the line as written`: what is wrong, what to do`,
one line, never the graph's words (node names, call_function / call_method); and a reference whose parameters and
inputs disagree in dtype, which cannot run at all, refused as such (CPU only)."""
import re
from pathlib import Path

import pytest
import torch

from kgen.ref.emit import emit_reference
from kgen.ref.plan import Planner
from kgen.ref.trace import RefError, load_reference

HERE = Path(__file__).parent
GRAPH_WORDS = re.compile(r"call_function|call_method|call_module|get_attr|placeholder|\bnode\b")

REFERENCE = """import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gn = nn.GroupNorm(2, 8)
{init}

    def forward(self, x):
        y = self.gn(x)
        {body}


def get_inputs():
    return [torch.rand(2, 8, 6, 6)]


def get_init_inputs():
    return []
"""


def refusal(tmp_path, body: str, init: str = "") -> str:
    path = tmp_path / "model.py"
    path.write_text(REFERENCE.format(body=body, init=init))
    with pytest.raises(RefError) as info:
        emit_reference(str(path))
    message = str(info.value)
    assert "\n" not in message and not GRAPH_WORDS.search(message), message
    return message


def test_a_function_the_file_cannot_call_names_the_line_its_number_and_what_to_do():
    path = HERE / "bad" / "unsupported_wrapped_function.py"
    with pytest.raises(RefError) as info:
        emit_reference(str(path))
    message = str(info.value)
    assert message.startswith(f"{path}:16: `return shallow(self.gn(x)) * 2`: "), message
    assert "kgen cannot plan `copy.copy`" in message and "another library" in message
    assert "write it with torch's functions" in message and not GRAPH_WORDS.search(message), message


@pytest.mark.parametrize("body, call", [
    ("return y.cumsum(1)", "y.cumsum(1)"),
    ("return self.pool(y)", "self.pool(y)"),
    ("z = torch.cummax(y, 1)[0]\n        return z", "torch.cummax(y, 1)"),
    ("return torch.topk(y, 2, dim=1).values", "torch.topk(y, 2, dim=1)"),
    ("return torch.sort(y, dim=-1)[0]", "torch.sort(y, dim=-1)"),
])
def test_methods_modules_and_functions_kgen_does_not_fuse_stay_pytorchs_calls(tmp_path, body, call):
    """No refusal for an op outside the regions: the emitted forward makes the reference's own call."""
    path = tmp_path / "model.py"
    path.write_text(REFERENCE.format(body=body, init="        self.pool = nn.LPPool2d(2, 2)"))
    text = emit_reference(str(path))[0]
    forward = text[text.index("    def forward(self, x):"):]
    assert call.replace("y", "gn", 1) in forward, forward[:800]


def test_an_op_with_no_line_of_the_reference_is_named_not_numbered(tmp_path):
    """A node no line of the reference made (kgen's or fx's own) is named as the reference would write it, not by
    its graph name (`node cumsum`)."""
    path = tmp_path / "model.py"
    path.write_text(REFERENCE.format(body="return torch.cumsum(y, 1)", init=""))
    planner = Planner(load_reference(path))
    node = next(n for n in planner.nodes if n.name == "cumsum")
    planner.ref.forward_lines.pop(node.name)
    assert planner.where(node) == f"{path}: `torch.cumsum` in Model.forward"
    module = next(n for n in planner.nodes if n.op == "call_module")
    planner.ref.forward_lines.pop(module.name)
    assert planner.where(module) == f"{path}: `self.gn` (GroupNorm) in Model.forward"


@pytest.mark.parametrize("name, start", [
    ("inplace_on_view.py", ":12: `x[:, :4].relu_()`: in-place `relu_`"),
    ("inplace_through_identity_alias.py", ":10: `y.relu_()`: in-place `relu_`"),
    ("custom_autograd_function.py", ":21: `return StraightThrough.apply(self.gn(x))`: a custom"),
    ("input_shape_mismatch.py", ":11: `return torch.relu(self.gn(x))`: running Model.forward"),
    ("branch_on_tensor_values.py", ":12: `if y.sum() > 0:`: Python branches on the values of a tensor"),
    ("setitem_through_view.py", ":13: `v[:, :2] = 0`: in-place `setitem` on a tensor that has views"),
    ("modules_in_plain_list.py", ":13: `x = torch.relu(n(x))`: torch.fx cannot trace Model.forward: NameError: "
                                 "module is not installed as a submodule (a module kept outside"),
    ("returns_none.py", ":11: `y = self.gn(x)`: no output of Model.forward depends on a GroupNorm (it returns None)"),
])
def test_trace_errors_carry_the_line_number(name, start):
    path = HERE / "bad" / name
    with pytest.raises(RefError) as info:
        emit_reference(str(path))
    assert str(info.value).startswith(f"{path}{start}"), str(info.value)
    assert not GRAPH_WORDS.search(str(info.value))


def test_autocast_switched_names_the_line_and_what_to_do(tmp_path):
    message = refusal(tmp_path, "with torch.autocast('cpu', dtype=torch.bfloat16):\n            z = y * 2\n        return z")
    assert re.search(r"model\.py:14: `z = y \* 2`: runs with autocast switched .*compute it without",
                     message), message


# ---- parameters and inputs of other dtypes ------------------------------------------------------------------

@pytest.mark.parametrize("init, body, what", [
    ("        self.half()", "return torch.relu(y)", "`self.gn` (GroupNorm) has float16 parameters"),
    ("        self.gn.to(torch.float16)", "return torch.relu(y)", "`self.gn` (GroupNorm) has float16 parameters"),
    ("        self.conv = nn.Conv2d(8, 8, 1).half()", "return self.conv(y)", "`self.conv` (Conv2d) has float16"),
    ("        self.w = nn.Parameter(torch.ones(8, 8, dtype=torch.float64))",
     "return torch.nn.functional.linear(y.flatten(2).transpose(1, 2), self.w)", "`F.linear` has float64"),
    ("        self.gn.double()", "return torch.relu(y)", "`self.gn` (GroupNorm) has float64 parameters"),
])
def test_parameters_of_another_dtype_than_the_input_are_refused(tmp_path, init, body, what):
    """The model built in half precision (or double) inside __init__, get_inputs() float32: PyTorch refuses the op,
    so the reference itself cannot run; meta tensors let the GroupNorm through, and kgen emitted a file."""
    message = refusal(tmp_path, body, init=init)
    assert what in message and "and its input is float32" in message and "cannot run" in message, message
    assert "get_inputs() return" in message and re.search(r"model\.py:1[23]: `", message), message


def test_float32_parameters_beside_a_half_input_are_mixed_precision_not_refused(tmp_path):
    """A GroupNorm of a float16 tensor with float32 weights runs in PyTorch (mixed precision, a float16 output): it
    is not refused, and is planned as a region as the float32 GroupNorm beside it (the kernels read float16 x and
    float32 parameters; the emitted file rounds the output to x's dtype, tests/ref/test_emitted_dtypes.py)."""
    path = tmp_path / "model.py"
    path.write_text(REFERENCE.format(init="        self.gn2 = nn.GroupNorm(2, 8)",
                                     body="return y + self.gn2(x.half()).float()"))
    ref = load_reference(path)
    assert ref.model.gn2.weight.dtype == torch.float32
    emit_reference(str(path))


def test_a_model_that_inherits_another_classes_init_is_refused_by_name(tmp_path):
    """nn.Module's own __init__ is written out (tests/ref/references/functional_gn_no_init.py); another base's
    cannot be, since ModelNew subclasses nn.Module."""
    path = tmp_path / "model.py"
    path.write_text("import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n\n"
                    "class Base(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
                    "        self.gn = nn.GroupNorm(2, 8)\n\n\n"
                    "class Model(Base):\n    def forward(self, x):\n        return self.gn(x)\n\n\n"
                    "def get_inputs():\n    return [torch.rand(2, 8, 6, 6)]\n\n\n"
                    "def get_init_inputs():\n    return []\n")
    with pytest.raises(RefError) as info:
        emit_reference(str(path))
    assert str(info.value) == f"{path}:12: Model inherits its __init__ from Base: kgen needs Model's own __init__ " \
                              f"(or nn.Module's)"


FUNCTIONAL = """import torch
import torch.nn.functional as F


class Model(torch.nn.Module):
    def forward(self, x):
        return F.group_norm(x, {groups}).relu()


def get_inputs():
    return [torch.rand(2, 8, 6, 6)]


def get_init_inputs():
    return []
"""


@pytest.mark.parametrize("groups, value, name", [("x.shape[1] // 4", 2, "floordiv"), ("x.size(1) - 6", 2, "sub"),
                                                 ("x.dim() - 2", 2, "sub"), ("x.numel() // 288", 2, "floordiv")])
def test_a_group_count_forward_works_out_from_shapes_is_passed_at_each_call(tmp_path, groups, value, name):
    path = tmp_path / "model.py"
    path.write_text(FUNCTIONAL.format(groups=groups))
    text = emit_reference(str(path))[0]
    forward = text[text.index("    def forward(self, x):"):]
    assert f"constexpr int kRegion0Groups = {value};" in text
    region_line = next(line for line in forward.splitlines() if "_ext.region0(" in line)
    assert f", None, None, {name}, " in region_line, region_line
    assert f"    {name} = " in forward.split(region_line)[0]


def test_a_group_count_kgen_cannot_work_out_is_one_clear_error(tmp_path):
    path = tmp_path / "model.py"
    path.write_text(FUNCTIONAL.format(groups="x.shape[1] ** 1 // 4"))
    with pytest.raises(RefError) as info:
        emit_reference(str(path))
    message = str(info.value)
    assert "\n" not in message and not GRAPH_WORDS.search(message), message
    assert "its group count is neither an int nor one worked out from the input shapes" in message


def test_a_groupnorm_whose_value_reaches_no_output_is_left_out(tmp_path):
    # REFERENCE's `y = self.gn(x)` unread, beside a GroupNorm that is: only the second becomes a region
    path = tmp_path / "model.py"
    path.write_text(REFERENCE.format(body="return torch.relu(self.gn2(x))", init="        self.gn2 = nn.GroupNorm(4, 8)"))
    text = emit_reference(str(path))[0]
    forward = text[text.index("    def forward(self, x):"):]
    assert "self.gn2.num_groups" in forward and "self.gn.num_groups" not in forward and "self.gn(" not in forward
