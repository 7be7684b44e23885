"""A float32 cast inside a region (plan_dtype.py): the region's output takes the dtype PyTorch's type promotion gives
it after the cast, in a model run at float64 or half precision; regions without one keep the common rule."""
import textwrap

import pytest
import torch

from kgen.ref.emit import emit_reference
from kgen.ref.ir import RegionStep
from kgen.ref.plan import make_plan
from kgen.ref.plan_dtype import FLOAT32, X, cpp_dtype, python_dtype
from kgen.ref.trace import load_reference
from tests.ref.test_emitted_glue import check_emitted_python

HEAD = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n\n"
TAIL = "\n\ndef get_inputs():\n    return [torch.randn(4, 8, 6, 5)]\n\n\ndef get_init_inputs():\n    return []\n"


def reference(tmp_path, name, forward: str):
    path = tmp_path / f"{name}.py"
    path.write_text(HEAD + "class Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
                    "        self.gn = nn.GroupNorm(4, 8)\n        self.scale = nn.Parameter(torch.rand(8, 1, 1) + 0.5)\n\n"
                    "    def forward(self, x):\n" + textwrap.indent(forward.strip(), " " * 8) + "\n" + TAIL)
    return path


def region(path):
    steps = [s for s in make_plan(load_reference(str(path)), "exact").steps if isinstance(s, RegionStep)]
    assert len(steps) == 1
    return steps[0]


CASES = {
    # the cast on every path after the GroupNorm: float32 whatever the model's dtype
    "cast_after_gn": ("y = self.gn(x).float()\nreturn torch.sigmoid(y) * y", FLOAT32),
    # a branch read without the cast (the input) promotes with it
    "cast_then_residual": ("return F.silu(self.gn(x).float()) + x", ("promote", FLOAT32, X)),
    # a parameter with dims after the cast promotes too
    "cast_then_scale": ("return self.gn(x).float() * self.scale", ("promote", FLOAT32, ("param", 0))),
    # the GroupNorm of a float32 copy
    "cast_before_gn": ("return torch.tanh(self.gn(x.float()))", ("gn", FLOAT32)),
    # the region's result cast, read after it only so
    "cast_at_the_end": ("return torch.tanh(self.gn(x)).float()", FLOAT32),
}


@pytest.mark.parametrize("name", list(CASES))
def test_the_output_dtype_follows_the_cast(tmp_path, name):
    forward, want = CASES[name]
    step = region(reference(tmp_path, name, forward))
    assert step.out_dtype == want
    path = reference(tmp_path, name, forward)
    assert f"dtype = {python_dtype(want)}\n" in emit_reference(str(path), autograd="python")[0]
    assert f"const at::ScalarType dtype = {cpp_dtype(want)};\n" in emit_reference(str(path))[0]


def test_without_a_cast_the_file_keeps_the_common_rule(tmp_path):
    path = reference(tmp_path, "no_cast", "return F.silu(self.gn(x)) * self.scale")
    assert region(path).out_dtype is None
    assert "dtype = _out_dtype(x, params, True)\n" in emit_reference(str(path), autograd="python")[0]
    assert "const at::ScalarType dtype = kgen_region_out_dtype(x, params);\n" in emit_reference(str(path))[0]


def test_the_expressions_render_in_python_and_cpp():
    expr = ("promote", ("gn", FLOAT32), ("param", 1))
    assert python_dtype(expr) == ("torch.promote_types((torch.float32 if torch.is_autocast_enabled(x.device.type) "
                                  "else torch.float32), params[1].dtype)")
    assert cpp_dtype(expr) == ("at::promote_types((at::autocast::is_autocast_enabled(x.device().type()) ? at::kFloat "
                               ": at::kFloat), params[1].scalar_type())")
    text = emit_reference(str(ROOT_PROBE), autograd="cpp")[0]
    assert "const at::ScalarType dtype = at::kFloat;" in text   # the region node's output dtype


ROOT_PROBE = __import__("pathlib").Path(__file__).parent / "references" / "gn_shrinks_expit_same_value_ops.py"


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("dtype", [torch.float64, torch.bfloat16], ids=["fp64", "bf16"])
def test_the_emitted_python_gives_the_references_dtypes_and_values(tmp_path, monkeypatch, name, dtype):
    path = reference(tmp_path, name, CASES[name][0])
    check_emitted_python(path, emit_reference(str(path))[0], monkeypatch, dtype=dtype)


GN32 = __import__("pathlib").Path(__file__).parent / "unseen" / "gn32_float_then_type_back.py"
GN32_READ_TWICE = GN32.parent / "gn32_read_by_conv_and_residual.py"


def test_groupnorm32s_cast_back_joins_the_region_and_gives_the_inputs_dtype():
    # gn(x.float()).type(x.dtype) then SiLU: one region (the SiLU fused), whose output has x's dtype (bfloat16 under
    # autocast, where the GroupNorm runs in float32), the GroupNorm reading x as float32
    step = region(GN32)
    assert [n.op for n in step.epilogue] == ["silu"] and step.out_dtype == X
    assert "        dtype = x.dtype\n" in emit_reference(str(GN32), autograd="python")[0]
    assert "const at::ScalarType dtype = x.scalar_type();\n" in emit_reference(str(GN32))[0]


def test_groupnorm32_read_after_its_region_gives_the_inputs_dtype():
    # the region is the GroupNorm alone, its value read by a conv and an add, both through the cast back
    step = region(GN32_READ_TWICE)
    assert step.epilogue == [] and step.out_dtype == X


@pytest.mark.parametrize("path", [GN32, GN32_READ_TWICE], ids=lambda p: p.stem)
@pytest.mark.parametrize("autocast", [False, True], ids=["fp32", "autocast_bf16"])
def test_groupnorm32s_emitted_python_matches_the_reference(monkeypatch, autocast, path):
    from tests.ref.emulated_ext import emulated_ext
    from tests.ref.test_emitted_glue import _run
    from tests.ref.test_emitted_python import load_emitted, load_reference_module

    solution = load_emitted(emit_reference(str(path))[0], monkeypatch)
    solution._ext = emulated_ext(make_plan(load_reference(str(path)), "exact"), solution)
    reference = load_reference_module(path)
    torch.manual_seed(0)
    theirs = reference.Model().eval()
    ours = solution.ModelNew()
    ours.load_state_dict(theirs.state_dict())
    torch.manual_seed(1)
    inputs = reference.get_inputs()
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
        want = _run(theirs, inputs, seed=2)
        got = _run(ours, inputs, seed=2)
    for (what, g), (_, w) in zip(got, want):
        assert g.dtype == w.dtype, what
        if not autocast:
            torch.testing.assert_close(g, w, atol=1e-5, rtol=1e-5, msg=lambda m: f"{what}: {m}")
            continue
        # bfloat16 values and gradients rounded at other points (the region's, in float32 between): as a whole
        error = float((g.double() - w.double()).norm() / w.double().norm())
        assert error < 1e-2, f"{what}: {error:.3g} from the reference's, relative to its norm"
