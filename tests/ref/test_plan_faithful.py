"""ref/plan_faithful.py: which regions a TF32 library op reads (their forward is then PyTorch's GroupNorm to the bit),
and what the emitted file and --explain say of it (CPU only)."""
import textwrap
from pathlib import Path

import pytest
import torch

from kgen.ref.emit import emit_reference
from kgen.ref.ir import RegionStep
from kgen.ref.plan import make_plan
from kgen.ref.trace import load_reference

CORPUS = Path(__file__).resolve().parent.parent / "corpus"
KERNELBENCH = Path(__file__).resolve().parent.parent.parent.parent / "shared" / "kernelbench" / "problems"

MODEL = """\
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gn = nn.GroupNorm(4, 16)
        self.conv = nn.Conv2d(16, 16, 3, padding=1)
        self.fc = nn.Linear(16, 8)

    def forward(self, x):
{body}


def get_inputs():
    return [torch.randn(2, 16, 6, 6)]


def get_init_inputs():
    return []
"""


def faithful(tmp_path, body: str) -> list[str]:
    path = tmp_path / "reference.py"
    path.write_text(MODEL.format(body=textwrap.indent(textwrap.dedent(body).strip(), " " * 8)))
    plan = make_plan(load_reference(path))
    return [s.faithful for s in plan.steps if isinstance(s, RegionStep)]


@pytest.mark.parametrize("body, expected", [
    ("return self.conv(F.silu(self.gn(x)))", ["self.conv (Conv2d)"]),
    # through other steps and library ops: a residual add, an average pool, then the conv
    ("y = F.relu(self.gn(x)) + x\nreturn self.conv(F.avg_pool2d(y, 2))", ["self.conv (Conv2d)"]),
    ("return self.fc(self.gn(x).mean(dim=(2, 3)))", ["self.fc (Linear)"]),
    ("return torch.matmul(self.gn(x), x)", ["matmul"]),
    ("y = self.gn(x)\nreturn y @ y", ["matmul"]),
    # nothing that rounds to TF32 reads it: kgen's own statistics and fastest family stay
    ("return torch.tanh(self.gn(x))", [""]),
    ("return self.gn(self.conv(x)).amax(dim=1)", [""]),
])
def test_a_region_is_faithful_where_a_tf32_op_reads_it(tmp_path, body, expected):
    assert faithful(tmp_path, body) == expected


def test_only_the_norms_a_convolution_reads_are_faithful():
    plan = make_plan(load_reference(CORPUS / "resnet_gn_bottleneck_tiny.py"))
    assert [s.faithful for s in plan.steps if isinstance(s, RegionStep)] == \
        ["self.conv2 (Conv2d)", "self.conv3 (Conv2d)", ""]


def test_the_file_and_explain_say_so(tmp_path):
    path = CORPUS / "resnet_gn_bottleneck_tiny.py"
    text, _, lines = emit_reference(str(path))
    assert text.count("Faithful = true;") == 2 and text.count("Faithful = false;") == 1
    assert "(_tf32(\"conv\")): self.conv2 (Conv2d) reads\n// this region's output" in text
    assert [("PyTorch's GroupNorm to the bit" in line) for line in lines if line.startswith("kgen region")] == \
        [True, True, False]


@pytest.mark.skipif(not KERNELBENCH.is_dir(), reason="../shared/kernelbench/problems is not beside this checkout")
@pytest.mark.parametrize("path", sorted(KERNELBENCH.glob("level*.py")), ids=lambda p: p.name[:20])
def test_no_kernelbench_problem_is_faithful(path):
    """Each of the 17 ends in its GroupNorm region (or a reduction of it): their kernels and timings stay as they were."""
    plan = make_plan(load_reference(path))
    assert all(not s.faithful for s in plan.steps if isinstance(s, RegionStep))


@pytest.mark.parametrize("mode, expected", [("auto", [True, True, False]), ("all", [True, True, True]),
                                            ("none", [False, False, False])])
def test_the_faithful_option_chooses_the_regions(mode, expected):
    path = CORPUS / "resnet_gn_bottleneck_tiny.py"
    text, _, _ = emit_reference(str(path), faithful=mode)
    marks = [line.endswith("true;") for line in text.splitlines() if line.startswith("constexpr bool kRegion") and "Faithful =" in line]
    assert marks == expected
    assert ("--faithful" in text.split("\n", 5)[2]) == (mode != "auto")   # the re-emit command names it


def test_a_linear_before_a_faithful_region_keeps_its_bias(tmp_path):
    """cuBLAS rounds the biased GEMM once; the bias peeled into the region would round twice. So the Linear keeps it
    (its own module call) and the region takes no bias at all: no zeros in its place. Under --faithful none the bias
    is the region's but in half precision (the library keeps it there, _library_bias)."""
    path = _linear_gn_linear(tmp_path)
    kept = emit_reference(str(path))[0]
    assert "fc1 = self.fc1(x)" in kept and "zeros_like" not in kept and "self.fc1.bias" not in kept
    peeled = emit_reference(str(path), faithful="none")[0]
    assert "F.linear(x, self.fc1.weight, _library_bias(self.fc1.bias, x))" in peeled
    assert "torch.zeros_like(self.fc1.bias)" not in peeled


def _linear_gn_linear(tmp_path):
    path = tmp_path / "linear_gn_linear.py"
    path.write_text(textwrap.dedent("""\
        import torch
        import torch.nn as nn


        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc1 = nn.Linear(32, 64)
                self.gn = nn.GroupNorm(8, 64)
                self.fc2 = nn.Linear(64, 16)

            def forward(self, x):
                return self.fc2(torch.relu(self.gn(self.fc1(x))))


        def get_inputs():
            return [torch.randn(8, 32)]


        def get_init_inputs():
            return []
        """))
    return path


def switches(tmp_path, body: str, mode: str = "auto") -> list[tuple[str, str]]:
    path = tmp_path / "reference.py"
    path.write_text(MODEL.format(body=textwrap.indent(textwrap.dedent(body).strip(), " " * 8)))
    plan = make_plan(load_reference(path), faithful=mode)
    return [(s.faithful, s.faithful_switch) for s in plan.steps if isinstance(s, RegionStep)]


@pytest.mark.parametrize("body, mode, expected", [
    # faithful at the calls where the TF32 setting of an op reading it is on: matmuls' (off by default), cuDNN's (on)
    ("return self.fc(self.gn(x).mean(dim=(2, 3)))", "auto", [("self.fc (Linear)", ("matmul",))]),
    ("y = self.gn(x)\nreturn y @ y", "auto", [("matmul", ("matmul",))]),
    ("return self.conv(self.gn(x))", "auto", [("self.conv (Conv2d)", ("conv",))]),
    # every TF32 op reachable counts, through the first: a matmul's output read by a convolution
    ("return self.conv(torch.matmul(self.gn(x), x))", "auto", [("matmul", ("conv", "matmul"))]),
    # an attention reads it (its kernels' own choice), or --faithful all: every call
    ("return F.scaled_dot_product_attention(self.gn(x), x, x)", "auto", [("scaled_dot_product_attention", ())]),
    ("return self.fc(self.gn(x).mean(dim=(2, 3)))", "all", [("self.fc (Linear)", ())]),
])
def test_a_region_is_faithful_at_the_calls_where_a_reader_rounds_to_tf32(tmp_path, body, mode, expected):
    assert switches(tmp_path, body, mode) == expected


def test_the_switched_file_reads_the_matmul_setting_at_each_call():
    text, _, lines = emit_reference(str(CORPUS / "mlp_groupnorm_tiny.py"))
    assert 'self.norm.eps, (), _tf32("matmul"), [])' in text and "node->faithful_ = faithful;" in text
    assert "int64_t rounding,\n                                         bool faithful) {" in text
    assert any("to the bit while matmul TF32 is on" in line for line in lines)
    python = emit_reference(str(CORPUS / "mlp_groupnorm_tiny.py"), autograd="python")[0]
    assert 'faithful = _tf32("matmul")' in python and "ctx.rounding, ctx.faithful)" in python
    resnet = emit_reference(str(CORPUS / "resnet_gn_bottleneck_tiny.py"))[0]
    assert resnet.count('(), _tf32("conv"), [])') == 2 and "constexpr bool faithful = kRegion2Faithful;" in resnet
    assert "_tf32" not in emit_reference(str(CORPUS / "resnet_gn_bottleneck_tiny.py"), faithful="all")[0]


_SETTING = """
import re, sys, torch
source = open(sys.argv[1]).read()
namespace = {"torch": torch}
exec(re.search(r"^def _precision_keys\\(\\):.*?^def _tf32\\(op\\):.*?(?=^\\S)", source, re.S | re.M).group(0), namespace)
before = namespace["_tf32"](sys.argv[3])
exec(sys.argv[2])
print(before, namespace["_tf32"](sys.argv[3]))
"""


_NEW_PRECISION_API = pytest.mark.skipif(not hasattr(torch.backends, "fp32_precision"),
                                        reason="this PyTorch has no fp32_precision settings")


@pytest.mark.parametrize("op, setting, on", [
    ("matmul", "torch.backends.cuda.matmul.allow_tf32 = True", True),
    ("matmul", "torch.set_float32_matmul_precision('high')", True),
    ("matmul", "torch.set_float32_matmul_precision('medium')", True),
    ("matmul", "torch.set_float32_matmul_precision('highest')", False),
    ("matmul", "torch.backends.cuda.matmul.allow_tf32 = True; torch.backends.cuda.matmul.allow_tf32 = False", False),
    pytest.param("matmul", "torch.backends.cuda.matmul.fp32_precision = 'tf32'", True, marks=_NEW_PRECISION_API),
    pytest.param("matmul", "torch.backends.fp32_precision = 'tf32'", True, marks=_NEW_PRECISION_API),
    pytest.param("matmul", "torch.backends.cuda.matmul.fp32_precision = 'ieee'", False, marks=_NEW_PRECISION_API),
    ("conv", "torch.backends.cudnn.allow_tf32 = True", True),
    ("conv", "torch.backends.cudnn.allow_tf32 = False", False),
    pytest.param("conv", "torch.backends.cudnn.conv.fp32_precision = 'ieee'", False, marks=_NEW_PRECISION_API),
    pytest.param("conv", "torch.backends.cudnn.fp32_precision = 'ieee'", False, marks=_NEW_PRECISION_API),
    pytest.param("conv", "torch.backends.fp32_precision = 'ieee'", False, marks=_NEW_PRECISION_API),
])
def test_the_tf32_settings_are_read_whichever_spelling_set_them(tmp_path, op, setting, on):
    """Each setting in a fresh process (PyTorch refuses to read its legacy flag once both spellings were used)."""
    import subprocess
    import sys
    path = tmp_path / "mlp.py"
    path.write_text(emit_reference(str(CORPUS / "mlp_groupnorm_tiny.py"))[0])
    done = subprocess.run([sys.executable, "-c", _SETTING, str(path), setting, op], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == [str(op == "conv"), str(on)]   # PyTorch's defaults: cuDNN's TF32 on, cuBLAS's off


@pytest.fixture
def precision_settings():
    """Restores PyTorch's float32 precision settings after a test that sets them."""
    keys = [("cuda", "conv"), ("cuda", "all"), ("generic", "all"), ("cuda", "matmul")]
    if not hasattr(torch._C, "_get_fp32_precision_getter"):
        pytest.skip("this PyTorch has no fp32_precision settings")
    saved = [torch._C._get_fp32_precision_getter(*key) for key in keys]
    yield
    for key, value in zip(keys, saved):
        torch._C._set_fp32_precision_setter(*key, value)


def test_the_files_tf32_reading_is_the_public_settings_first_word(precision_settings):
    """`_tf32` (which the emitted files carry) reads PyTorch's C++ getters directly; what it says at every mix of the
    settings is what the public properties say: the op's own, its backend's, the global one, the first not "none"."""
    import itertools
    from kgen.ref.tf32 import _tf32

    def public(op):
        owners = ((torch.backends.cudnn.conv, torch.backends.cudnn, torch.backends) if op == "conv"
                  else (torch.backends.cuda.matmul, torch.backends))
        first = next((o.fp32_precision for o in owners if o.fp32_precision != "none"), "none")
        return first not in ("none", "ieee")

    seen = set()
    for conv, cudnn, generic, matmul in itertools.product(("none", "ieee", "tf32"), repeat=4):
        torch.backends.cudnn.conv.fp32_precision = conv
        torch.backends.cudnn.fp32_precision = cudnn
        torch.backends.fp32_precision = generic
        torch.backends.cuda.matmul.fp32_precision = matmul
        for op in ("conv", "matmul"):
            assert _tf32(op) == public(op), (op, conv, cudnn, generic, matmul)
            seen.add(_tf32(op))
    assert seen == {True, False}


def _value_function(text: str, region: int) -> str:
    """The body of Region<region>Epilogue::value in an emitted file."""
    struct = text[text.index(f"struct Region{region}Epilogue {{"):]
    body = struct[struct.index("float value(float y"):]
    return body[:body.index("\n  }")]


def test_the_forward_takes_the_cheaper_forms_only_where_the_region_is_not_faithful():
    """A faithful region's epilogue computes PyTorch's formulas (its bits); one that is not normalises with kgen's own
    statistics, so its epilogue takes the forms a backward recomputes with (mish: one exp and a division)."""
    pooled = emit_reference(str(CORPUS / "odd_shapes_tiny.py"))[0]   # GroupNorm -> mish -> max pool, no conv after
    assert "kgen::mish_fast(y)" in _value_function(pooled, 0) and "mishf" not in _value_function(pooled, 0)
    read_by_conv = emit_reference(str(CORPUS / "diffusion_resblock_tiny.py"))[0]   # faithful: a conv reads it
    assert "kgen::siluf(y)" in _value_function(read_by_conv, 0) and "silu_fast" not in _value_function(read_by_conv, 0)
    everywhere_own = emit_reference(str(CORPUS / "diffusion_resblock_tiny.py"), faithful="none")[0]
    assert "kgen::silu_fast(y)" in _value_function(everywhere_own, 0)
