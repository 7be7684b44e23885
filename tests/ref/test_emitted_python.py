"""The Python side of files `kgen emit --ref` writes, checked on the CPU with the CUDA build stubbed out: the file
compiles, ModelNew builds from the reference's init arguments with the reference's parameters and buffers (same
names, same random draws, strict state_dict), and what the reference's code reads besides its Model (imports,
constants, helper classes, containers, tensors made in forward, forward's defaults, self.training) is there."""
import ast
import sys
import types
from pathlib import Path

import pytest
import torch
import torch.utils.cpp_extension

from kgen.ref.emit import emit_reference
from kgen.ref.trace import RefError
from tests.emitted_names import undefined_names

HERE = Path(__file__).parent
OWN = sorted((HERE / "references").glob("*.py"))
# References written to probe the planner: each emitted and validated on an H100
# (`git show fc1f713:benchmarks/h100/s20/`).
PROBE = sorted((HERE / "probe").glob("*.py"))


def load_emitted(text: str, monkeypatch) -> types.ModuleType:
    """The emitted module, executed with load_inline returning a stand-in (nothing is built), once every global name
    its code reads is defined (code paths a test does not run included)."""
    assert undefined_names(text) == set(), "the emitted file reads names it does not define"
    monkeypatch.setattr(torch.utils.cpp_extension, "load_inline", lambda **kwargs: types.SimpleNamespace())
    module = types.ModuleType("emitted_solution")
    exec(compile(text, "emitted_solution.py", "exec"), module.__dict__)
    return module


def load_reference_module(path: Path) -> types.ModuleType:
    module = types.ModuleType("reference_module")
    module.__file__ = str(path)
    exec(compile(path.read_text(), str(path), "exec"), module.__dict__)
    return module


@pytest.mark.parametrize("path", OWN + PROBE, ids=lambda p: p.stem)
def test_model_new_builds_with_the_references_state(path, monkeypatch):
    text, _, _ = emit_reference(str(path))
    solution = load_emitted(text, monkeypatch)
    reference = load_reference_module(path)
    init = reference.get_init_inputs()
    torch.manual_seed(0)
    ours = solution.ModelNew(*init)
    torch.manual_seed(0)
    theirs = reference.Model(*init)
    mine, expected = ours.state_dict(), theirs.state_dict()
    assert list(mine) == list(expected)
    for key in expected:
        assert torch.equal(mine[key], expected[key]), key
    ours.load_state_dict(expected, strict=True)
    # every `self.a.b[0].c` forward reads exists on the built model
    model_new = next(c for c in ast.parse(text).body if isinstance(c, ast.ClassDef) and c.name == "ModelNew")
    forward = next(f for f in model_new.body if isinstance(f, ast.FunctionDef) and f.name == "forward")
    for node in ast.walk(forward):
        if isinstance(node, (ast.Attribute, ast.Subscript)) and "self." in ast.unparse(node) and \
                isinstance(node.ctx, ast.Load) and ast.unparse(node).startswith("self."):
            expr = ast.unparse(node)
            if "(" not in expr and not expr.endswith(".apply"):
                eval(expr, {"self": ours})


def emitted(name: str) -> str:
    return emit_reference(str(HERE / "references" / f"{name}.py"))[0]


def forward_source(text: str) -> str:
    return text[text.index("    def forward(self"):text.index("\ndef get_inputs")]


def test_containers_are_indexed_not_dotted():
    text = emitted("sequential_modulelist_blocks")
    assert "self.block[0]._conv_forward(x, self.block[0].weight, None)" in text
    assert "self.norms[1].weight" in text and "self.scales[0]" in text


def test_what_model_reads_from_its_file_comes_along_and_forward_keeps_its_defaults():
    text = emitted("helper_class_prelude")
    prelude = text[text.index("# ---- from the reference"):text.index("CUDA_SOURCE")]
    for line in ("import math", "from typing import Optional", "INIT_SCALE = 0.5", "class ChannelScale(nn.Module):"):
        assert line in prelude
    assert "def get_inputs" not in prelude and "class Model(" not in prelude
    assert "def forward(self, x, shift=0.25):" in text


def test_a_tensor_made_in_forward_is_a_buffer_and_keywords_are_read(monkeypatch):
    text = emitted("tensor_constants_keywords")
    assert "self.register_buffer('_tensor_constant0', torch.tensor(0.10000000149011612, dtype=torch.float32), " \
           "persistent=False)" in text
    model = load_emitted(text, monkeypatch).ModelNew(6, 2)
    assert "_tensor_constant0" not in model.state_dict() and model._tensor_constant0.item() == pytest.approx(0.1)
    # every op, the keyword-passed ones included, is in the one region
    assert forward_source(text).count("_ext.region0(") == 1 and "torch." not in forward_source(text).replace(
        "torch.is_grad_enabled", "")


def test_non_float32_and_infinite_constants_stay_pytorch_and_print_as_python():
    text = emitted("where_inf_bool_mask_float64")
    assert "float('-inf')" in text
    assert "an element-wise op on a tensor that is not float32" in text


def test_a_convolution_called_with_more_than_its_input_keeps_its_bias_and_arguments():
    text = emitted("convt_output_size_inplace_dropout")
    assert "self.up(x, output_size=[14, 18])" in text
    # the in-place dropout writes into a copy: the region's saved output stays valid for its backward, and the
    # dropout is the reference's own in-place kernel (its random draws too)
    assert "drop = self.drop(gn.clone())" in text


def test_the_training_flag_follows_the_model_and_functors_keep_four_parameters():
    text = emitted("training_flag_many_params")
    assert "training=self.training" in text
    assert "_ext.region0(x, self.w, self.b, 2, 1e-05" in text
    # the fifth parameter's multiply: outside the region, alone, so the reference's own op
    assert "mul_2 = add_1 * p_4" in text and "_Pointwise" not in text


BRANCHY = ("import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n"
           "    def __init__(self):\n        super().__init__()\n        self.gn = nn.GroupNorm(2, 4)\n{built}\n"
           "    def forward(self, x):\n        y = self.gn(x)\n        if self.training:\n"
           "            y = torch.relu(y) * 2\n        return y\n\n\n"
           "def get_inputs():\n    return [torch.rand(2, 4, 3, 3)]\n\n\n"
           "def get_init_inputs():\n    return []\n")


@pytest.mark.parametrize("built", ["", "        self.eval()\n"], ids=["training", "eval"])
def test_a_forward_that_branches_on_training_gets_a_plan_for_each_mode(tmp_path, built):
    """The mode the model is built in is planned first, and the forward runs its statements under that test."""
    path = tmp_path / "branchy.py"
    path.write_text(BRANCHY.format(built=built))
    text = emit_reference(str(path))[0]
    forward = forward_source(text)
    first, second = ("self.training", "relu -> mul") if not built else ("not self.training", "GroupNorm  [")
    assert f"        if {first}:\n" in forward
    assert forward.count("_ext.region") == 2 and "_ext.region0(" in forward and "_ext.region1(" in forward
    assert "(the forward branches on self.training)" in text and second in text


def test_an_internal_planning_failure_is_one_line(monkeypatch):
    import kgen.ref.emit as emit_module

    def broken(ref, conv, faithful="auto"):
        raise IndexError("tuple index out of range")

    monkeypatch.setattr(emit_module, "make_plan", broken)
    with pytest.raises(RefError) as info:
        emit_reference(str(OWN[0]))
    message = str(info.value)
    assert "\n" not in message and "internal error" in message and "IndexError" in message


def test_the_training_flag_is_found_in_a_model_built_in_eval_mode(tmp_path):
    path = tmp_path / "built_eval.py"
    path.write_text("import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n\n"
                    "class Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
                    "        self.gn = nn.GroupNorm(2, 4)\n        self.eval()\n\n"
                    "    def forward(self, x):\n        return F.dropout(torch.relu(self.gn(x)), 0.5, self.training)\n\n\n"
                    "def get_inputs():\n    return [torch.rand(2, 4, 3, 3)]\n\n\n"
                    "def get_init_inputs():\n    return []\n")
    text = emit_reference(str(path))[0]
    assert "F.dropout(relu, p=0.5, training=self.training, inplace=False)" in text


def test_size_arithmetic_stays_python():
    text = emit_reference(str(HERE / "probe" / "convt_output_size_from_input_sizes.py"))[0]
    forward = forward_source(text)
    assert "mul = size * 2" in forward and "self.up(x, output_size=[mul, mul_1])" in forward


def test_an_input_that_is_not_float32_keeps_the_references_expression(tmp_path, monkeypatch):
    """get_inputs() with an index tensor (an nn.Embedding's) and a bool mask: the emitted get_inputs is the
    reference's own, with the module constants it reads, so the index stays an index tensor (a float one the embedding
    refuses) and the float input keeps its distribution (randn, not rand)."""
    path = tmp_path / "index_input.py"
    path.write_text("import torch\nimport torch.nn as nn\n\nbatch_size = 2\nsteps = 10\n\n\n"
                    "class Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
                    "        self.emb = nn.Embedding(steps, 8)\n        self.gn = nn.GroupNorm(4, 8)\n\n"
                    "    def forward(self, x, t, keep):\n"
                    "        y = torch.relu(self.gn(x + self.emb(t)[:, :, None, None]))\n"
                    "        return torch.where(keep, y, 0.0)\n\n\n"
                    "def get_inputs():\n    return [torch.randn(batch_size, 8, 5, 5), torch.randint(0, steps, (batch_size,)),\n"
                    "            torch.rand(batch_size, 8, 5, 5) > 0.5]\n\n\n"
                    "def get_init_inputs():\n    return []\n")
    text, _, _ = emit_reference(str(path))
    assert "return [torch.randn(batch_size, 8, 5, 5), torch.randint(0, steps, (batch_size,)), " \
           "torch.rand(batch_size, 8, 5, 5) > 0.5]" in text
    solution = load_emitted(text, monkeypatch)
    inputs = solution.get_inputs()
    assert [t.dtype for t in inputs] == [torch.float32, torch.int64, torch.bool]
    assert solution.batch_size == 2 and solution.steps == 10


def test_forward_keeps_the_references_argument_names_and_keyword_only_marker(tmp_path):
    """`def forward(self, input, *, scale=2.0)`: fx names the placeholder `input_1` (`input` is taken), and the
    emitted forward was `forward(self, input_1, scale=2.0)`, so `model(input=t)` failed and scale became positional.
    The emitted signature is the reference's; the graph's name is bound first."""
    path = tmp_path / "names.py"
    path.write_text("import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n"
                    "    def __init__(self):\n        super().__init__()\n        self.gn = nn.GroupNorm(2, 4)\n\n"
                    "    def forward(self, input, *, scale=2.0):\n        return torch.relu(self.gn(input)) * scale\n\n\n"
                    "def get_inputs():\n    return [torch.rand(2, 4, 5, 5)]\n\n\ndef get_init_inputs():\n    return []\n")
    forward = forward_source(emit_reference(str(path))[0])
    assert forward.startswith("    def forward(self, input, *, scale=2.0):\n        input_1 = input\n")


def test_functional_groupnorm_reads_groups_and_eps_from_the_model(tmp_path, monkeypatch):
    """F.group_norm(x, self.groups, self.w, self.b, self.eps): fx hands over 4 and 1e-3, and the emitted call wrote
    those literals, so a ModelNew built with other init arguments normalised with the reference's groups and eps.
    The call now reads the model's attributes (the kernels' specialised group count stays the traced one); a literal
    in the reference stays a literal."""
    path = tmp_path / "groups_attribute.py"
    path.write_text("import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n\n"
                    "class Model(nn.Module):\n    def __init__(self, channels, groups, eps):\n        super().__init__()\n"
                    "        self.groups, self.eps = groups, eps\n"
                    "        self.w = nn.Parameter(torch.ones(channels))\n        self.b = nn.Parameter(torch.zeros(channels))\n\n"
                    "    def forward(self, x):\n"
                    "        y = torch.relu(F.group_norm(x, self.groups, self.w, self.b, self.eps))\n"
                    "        return F.group_norm(y, 2, eps=1e-4)\n\n\n"
                    "def get_inputs():\n    return [torch.rand(2, 8, 5, 5)]\n\n\n"
                    "def get_init_inputs():\n    return [8, 4, 1e-3]\n")
    text = emit_reference(str(path))[0]
    assert "_ext.region0(x, self.w, self.b, self.groups, self.eps, ()" in text
    assert "_ext.region1(relu, None, None, 2, 0.0001, ()" in text
    assert "constexpr int kRegion0Groups = 4;" in text


def test_an_int_attribute_the_kernels_bake_in_is_checked(tmp_path, monkeypatch):
    """`y * self.k` with k = 3 from the init arguments: the kernels multiply by 3.0, and only float attributes were
    checked at construction, so ModelNew(5) multiplied by 3 silently. An int attribute read on the node's own line is
    checked now; an int equal to a constant by chance (in_channels = 3 beside `+ 3.0`) is not."""
    path = tmp_path / "int_attribute.py"
    path.write_text("import torch\nimport torch.nn as nn\n\n\n"
                    "class Model(nn.Module):\n    def __init__(self, in_channels, k):\n        super().__init__()\n"
                    "        self.in_channels, self.k = in_channels, k\n"
                    "        self.conv = nn.Conv2d(in_channels, 8, 3)\n        self.gn = nn.GroupNorm(4, 8)\n\n"
                    "    def forward(self, x):\n        y = torch.relu(self.gn(self.conv(x)) + 3.0)\n"
                    "        return y * self.k\n\n\n"
                    "def get_inputs():\n    return [torch.rand(2, 3, 6, 6)]\n\n\n"
                    "def get_init_inputs():\n    return [3, 3]\n")
    text = emit_reference(str(path))[0]
    assert "_check_baked_constants(self, {'k': 3.0})" in text
    solution = load_emitted(text, monkeypatch)
    solution.ModelNew(3, 3)
    with pytest.raises(ValueError, match="k = 3.0"):
        solution.ModelNew(3, 5)


@pytest.mark.parametrize("call, window", [
    ("F.max_pool2d(y, self.k)", "_window(self.k, 2)"),
    ("F.avg_pool2d(y, kernel_size=self.k, stride=self.k)", "_window(self.k, 2)"),
    ("F.max_pool2d(y, self.k, 2)", "(2, 2)"),          # a literal stride: the window stays the traced one
    ("F.max_pool2d(y, kernel_size=2)", "(2, 2)"),
])
def test_a_functional_pools_window_held_by_the_model_is_read_from_it(tmp_path, call, window):
    """F.max_pool2d(y, self.k): the window was baked in as the traced (2, 2), so ModelNew(k=3) pooled 2 x 2; it is
    now read from the model at run time, as a pooling module's kernel_size is."""
    path = tmp_path / "pool_attribute.py"
    path.write_text("import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n\n"
                    "class Model(nn.Module):\n    def __init__(self, k):\n        super().__init__()\n        self.k = k\n"
                    "        self.gn = nn.GroupNorm(2, 4)\n\n    def forward(self, x):\n        y = torch.relu(self.gn(x))\n"
                    f"        return {call}\n\n\n"
                    "def get_inputs():\n    return [torch.rand(2, 4, 8, 8)]\n\n\ndef get_init_inputs():\n    return [2]\n")
    forward = forward_source(emit_reference(str(path))[0])
    assert f"self.gn.eps, {window}, [])" in forward
