"""One emitted file for every dtype: a reference that lives in float16 or bfloat16 emits, and the emitted module gives
each step's output the dtype the reference's ops give it (the rule the kernels' float32 results are rounded to).
The kernels themselves at each dtype are GPU tests (tests/gpu/test_region_dtypes.py)."""
import textwrap
import types
from pathlib import Path

import pytest
import torch
import torch.utils.cpp_extension

from kgen.ref import ops
from kgen.ref.emit import emit_reference
from kgen.ref.ir import Operand, PwNode

REFERENCE = textwrap.dedent("""\
    import torch
    import torch.nn as nn


    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(4, 8, 3)
            self.gn = nn.GroupNorm(2, 8)
            self.scale = nn.Parameter(torch.rand(8, 1, 1) + 0.5)
            self.to({dtype})

        def forward(self, x):
            return torch.relu(self.gn(self.conv(x))) * self.scale


    def get_inputs():
        return [torch.rand(2, 4, 10, 10, dtype={dtype})]


    def get_init_inputs():
        return []
    """)


def emitted_module(text: str, monkeypatch) -> types.ModuleType:
    monkeypatch.setattr(torch.utils.cpp_extension, "load_inline", lambda **kwargs: types.SimpleNamespace())
    module = types.ModuleType("emitted_solution")
    exec(compile(text, "emitted_solution.py", "exec"), module.__dict__)
    return module


@pytest.fixture(scope="module")
def float32_text(tmp_path_factory):
    path = tmp_path_factory.mktemp("ref") / "model.py"
    path.write_text(REFERENCE.format(dtype="torch.float32"))
    return emit_reference(str(path), autograd="python")[0]   # the Python Function's dtype helpers


@pytest.mark.parametrize("dtype", ["torch.bfloat16", "torch.float16"])
def test_a_reference_living_in_half_precision_emits_a_region(tmp_path, dtype):
    path = tmp_path / "model.py"
    path.write_text(REFERENCE.format(dtype=dtype))
    text = emit_reference(str(path))[0]
    assert "_ext.region0(" in text and "is not float32" not in text


def test_output_dtype_keeps_the_inputs_dtype(float32_text, monkeypatch):
    out_dtype = emitted_module(float32_text, monkeypatch)._out_dtype
    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        x = torch.rand(2, 8, 3, dtype=dtype)
        assert out_dtype(x, [torch.rand(8, 1, dtype=dtype)], True) == dtype


def test_output_dtype_promotes_as_pytorch(float32_text, monkeypatch):
    """A (C, 1) float32 parameter widens a bfloat16 x as `x * p` does; a 0-dim one does not; the rule agrees with
    PyTorch's own result for each case."""
    out_dtype = emitted_module(float32_text, monkeypatch)._out_dtype
    x = torch.rand(2, 8, 3, dtype=torch.bfloat16)
    for p in (torch.rand(8, 1), torch.rand(()), torch.rand(8, 1, dtype=torch.float16), torch.rand(1)):
        assert out_dtype(x, [p], False) == (x * p).dtype, p.shape


def test_output_dtype_under_autocast(float32_text, monkeypatch):
    """Under autocast a step with an op autocast runs in float32 (GroupNorm, exp...) gives float32, as the reference's
    op does; one without keeps x's dtype. (CPU autocast stands in for CUDA's: the rule asks x's device type.)"""
    out_dtype = emitted_module(float32_text, monkeypatch)._out_dtype
    x = torch.rand(2, 8, 3, dtype=torch.bfloat16)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert out_dtype(x, [], True) == torch.float32
        assert out_dtype(x, [], False) == torch.bfloat16
    assert out_dtype(x, [], True) == torch.bfloat16


def test_regions_pass_the_outputs_rounding(float32_text, monkeypatch):
    """The kernels learn the output's dtype as a rounding code (kgen::Rounding), forward and backward."""
    module = emitted_module(float32_text, monkeypatch)
    assert module._ROUNDING == {torch.float32: 0, torch.bfloat16: 1, torch.float16: 2}
    assert "list(window), for_backward, rounding)" in float32_text and "ctx.window, ctx.rounding)" in float32_text
    assert "return _as_dtype(out, dtype)" in float32_text   # out.to(dtype), skipped where out has it already
    assert module._as_dtype(torch.ones(2), torch.float16).dtype == torch.float16
    same = torch.ones(2)
    assert module._as_dtype(same, torch.float32) is same


def test_functors_round_as_the_reference_stores(float32_text):
    """Each functor's value has a stored form: its inputs and every op's result rounded as the reference stores them
    at its dtype; backward stays exact."""
    cuda = float32_text[float32_text.index("struct Region0Epilogue"):]
    cuda = cuda[:cuda.index("\n};")]
    assert "if (rounding != kgen::kExact) return value_stored(y, z, x);" in cuda
    stored = cuda[cuda.index("value_stored(float y"):cuda.index("void backward")]
    assert "const float s_y = kgen::stored(y, rounding);" in stored
    assert stored.count("kgen::stored(") == stored.count("const float ")
    assert "kgen::stored" not in cuda[cuda.index("void backward"):]


def node(op, *operands):
    return PwNode(name="n", op=op, operands=list(operands), consts={})


def test_autocast_float32_ops_are_autocasts_list():
    value, scalar = Operand.of_value("y"), Operand.of_scalar(2.0)
    assert ops.autocast_float32([node("relu", value), node("exp", value)])
    assert ops.autocast_float32([node("div", scalar, value)])       # 2 / y: __rtruediv__
    assert not ops.autocast_float32([node("div", value, scalar)])   # y / 2
    assert not ops.autocast_float32([node("tanh", value), node("mul", value, scalar)])


def test_a_conv_bias_is_the_regions_in_every_dtype(float32_text):
    """cuDNN convolves without the bias and PyTorch adds it after, rounding twice in half precision: the region's
    prologue adds it at those rounding points (value_stored), so the conv runs without it at every dtype."""
    assert "_conv_forward(x, self.conv.weight, None)" in float32_text
    assert ", self.conv.bias, self.scale)" in float32_text
    assert "_library_bias" not in float32_text and "_peeled_bias" not in float32_text


LINEAR_REFERENCE = textwrap.dedent("""\
    import torch
    import torch.nn as nn


    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(16, 8)
            self.gn = nn.GroupNorm(2, 8)

        def forward(self, x):
            return torch.relu(self.gn(self.fc(x)))


    def get_inputs():
        return [torch.rand(4, 16)]


    def get_init_inputs():
        return []
    """)


def test_a_linear_bias_stays_in_the_library_call_in_half_precision(tmp_path, monkeypatch):
    """cuBLAS adds a linear's bias in the GEMM, rounding the biased result once: in float16 / bfloat16 the call keeps
    it and the region adds zeros; in float32 and under autocast the region adds it."""
    path = tmp_path / "model.py"
    path.write_text(LINEAR_REFERENCE)
    text = emit_reference(str(path))[0]
    assert "F.linear(x, self.fc.weight, _library_bias(self.fc.bias, x))" in text
    assert "_peeled_bias(self.fc.bias, fc)" in text
    module = emitted_module(text, monkeypatch)
    bias = torch.rand(8)
    x32, x16 = torch.rand(4, 16), torch.rand(4, 16, dtype=torch.bfloat16)
    assert module._library_bias(bias, x32) is None and module._peeled_bias(bias, x32) is bias
    assert module._library_bias(bias, x16) is bias and torch.equal(module._peeled_bias(bias, x16), torch.zeros(8))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert module._library_bias(bias, x16) is None and module._peeled_bias(bias, x16) is bias
    # the zeros made once per shape, dtype and device: no fill each call
    zeros = module._peeled_bias(bias, x16)
    assert module._peeled_bias(torch.rand(8), x16) is zeros
    half = module._peeled_bias(bias.to(torch.bfloat16), x16)
    wide = module._peeled_bias(torch.rand(16), x16)
    assert half.dtype == torch.bfloat16 and not half.any() and wide.shape == (16,) and not wide.any()
    assert half is not zeros and wide is not zeros and not zeros.any()




def test_a_conv_bias_before_a_batch_norm_is_the_steps_in_every_dtype():
    """A conv's bias before a batch norm goes to the step in every dtype (in half precision its kernels add it and
    round as PyTorch's add after cuDNN's conv does, BnShift); a linear's stays in the GEMM at half, the step getting
    zeros."""
    root = Path(__file__).resolve().parent
    conv = emit_reference(str(root / "references" / "convt_bn_tanh_maxpool_gn_odd.py"))[0]
    assert "self.conv_transpose.weight, None," in conv
    assert ", self.conv_transpose.bias, self.batch_norm.eps," in conv
    assert "_library_bias" not in conv and "_peeled_bias" not in conv
    linear = emit_reference(str(root / "references" / "linear_bn1d_noaffine_relu_gn.py"))[0]
    assert "_library_bias(self.fc.bias, x)" in linear and "_peeled_bias(self.fc.bias, fc)" in linear
