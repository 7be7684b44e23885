"""`kgen emit --ref REF` on the CPU: each region one C++ autograd node (ref/autograd.cpp.j2, the default). The file
keeps KernelBench's static rules, carries no Python Function for those regions, exports the node's entry point
instead of the kernels' own, records `--autograd python` (not the default) in its header; and ModelNew.forward, run with the extension stubbed,
calls each entry point with arguments pybind11 takes for the C++ signature the file declares. The node itself runs on
the GPU: tests/gpu/test_autograd_cpp.py (bitwise the Python Function's outputs and gradients)."""
from __future__ import annotations

import re
import types
from pathlib import Path

import pytest
import torch
import torch.utils.cpp_extension
from click.testing import CliRunner

from kgen.cli import main
from kgen.emit import static_rule_violation
from kgen.header import parse_header
from kgen.ref.emit import emit_reference
from kgen.ref.trace import RefError
from tests.ref.test_emitted_python import load_reference_module

ROOT = Path(__file__).resolve().parents[2]
REFERENCES = [
    "tests/corpus/mlp_groupnorm_tiny.py",
    "tests/corpus/adaptive_groupnorm_tiny.py",
    "kgen/specs/references/level2_92_conv2d_groupnorm_tanh_hardswish_residualadd_logsumexp.py",
    "tests/ref/references/gn_maxpool_hardtanh_relu.py",
    "tests/ref/references/gn_channel_max_lse.py",
    "tests/ref/references/conv3d_gn_swish_global_avgpool.py",
    "tests/ref/references/conv2d_prelu_gn_prelu_channels.py",
    "tests/ref/references/two_groupnorms.py",
]
# pybind11's conversions of the C++ parameter types the entry points take
ACCEPTS = {
    "at::Tensor": lambda v: isinstance(v, torch.Tensor),
    "c10::optional<at::Tensor>": lambda v: v is None or isinstance(v, torch.Tensor),
    "int64_t": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "double": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "bool": lambda v: isinstance(v, bool),
    "std::vector<int64_t>": lambda v: isinstance(v, (list, tuple)) and all(isinstance(i, int) for i in v),
    "std::vector<at::Tensor>": lambda v: isinstance(v, (list, tuple)) and all(isinstance(t, torch.Tensor) for t in v),
}


def emitted(ref: str, autograd: str = "cpp") -> str:
    return emit_reference(str(ROOT / ref), autograd=autograd)[0]


def entry_points(text: str) -> dict[str, list[str]]:
    """regionN -> its C++ parameter types, from the file's CPP_SOURCE."""
    cpp = text.split('CPP_SOURCE = r"""', 1)[1].split('"""', 1)[0]
    found = {}
    for name, params in re.findall(r"^at::Tensor (region\d+)\(\s*(.*?)\)\s*\{", cpp, re.S | re.M):
        # comma-separated parameters (no type of theirs has a comma inside), their types alone
        found[name] = [re.sub(r"\s+\w+$", "", p.strip()) for p in " ".join(params.split()).split(", ")]
    return found


@pytest.mark.parametrize("ref", REFERENCES, ids=[Path(r).stem for r in REFERENCES])
def test_a_cpp_autograd_file_replaces_each_region_function_by_one_node(ref):
    text = emitted(ref)
    assert static_rule_violation(text) is None
    regions = sorted(set(re.findall(r"_ext\.(region\d+)\(", text)))
    assert regions, "no region called through its C++ node"
    functions = re.search(r"functions=(\[.*?\])", text).group(1)
    for name in regions:
        assert f'"{name}"' in functions and f'"{name}_forward"' not in functions
        assert f"class _Region{name[6:]}(" not in text
        assert f"struct Region{name[6:]}Backward : public torch::autograd::Node" in text
    assert "autograd" not in parse_header(text).params   # the default, not recorded
    assert "--autograd" not in text.splitlines()[2]


def test_the_node_is_the_default_and_the_python_function_is_recorded():
    ref = REFERENCES[0]
    assert emitted(ref, "cpp") == emit_reference(str(ROOT / ref))[0]
    python = emitted(ref, "python")
    assert parse_header(python).params.get("autograd") == "python" and "--autograd python" in python.splitlines()[2]
    assert "class _Region0(torch.autograd.Function)" in python and "struct Region0Backward" not in python


# references whose every kgen step is a region keeping its input's shape (what the stub below returns): a peeled bias
# and a matmul switch, no affine, parameters in both functors, two regions
@pytest.mark.parametrize("ref", [REFERENCES[0], "tests/ref/references/conv1d_gn_noaffine_relu.py", REFERENCES[6],
                                 REFERENCES[7]], ids=lambda r: Path(r).stem)
def test_forward_calls_each_node_with_what_its_cpp_signature_takes(ref, monkeypatch):
    text = emitted(ref)
    signatures = entry_points(text)
    calls = []

    def node(name):
        def call(*args):
            calls.append(name)
            types_ = signatures[name]
            assert len(args) == len(types_), f"{name}: {len(args)} arguments for {types_}"
            for k, (arg, kind) in enumerate(zip(args, types_)):
                assert ACCEPTS[kind](arg), f"{name} argument {k}: {type(arg).__name__} for {kind}"
            return args[0] * 1.0    # these regions keep their input's shape
        return call

    stub = types.SimpleNamespace(**{name: node(name) for name in signatures})
    monkeypatch.setattr(torch.utils.cpp_extension, "load_inline", lambda **kwargs: stub)
    module = types.ModuleType("emitted_cpp_solution")
    exec(compile(text, "emitted_cpp_solution.py", "exec"), module.__dict__)
    reference = load_reference_module(ROOT / ref)
    model = module.ModelNew(*reference.get_init_inputs())
    model(*reference.get_inputs())
    assert sorted(set(calls)) == sorted(signatures)


def test_a_bad_autograd_mode_is_one_clear_error():
    with pytest.raises(RefError, match="--autograd must be one of cpp, python"):
        emit_reference(str(ROOT / REFERENCES[0]), autograd="jit")
    result = CliRunner().invoke(main, ["emit", "groupnorm", "--autograd", "cpp"])
    assert result.exit_code == 2 and "--autograd is --ref's" in result.output


def test_a_region_fed_by_kgens_conv_keeps_its_python_functions():
    # --conv fused: the region's Function pairs with kgen's conv (_Region0ConvT) and is the dispatcher's fallback
    ref = ROOT / "kgen" / "specs" / "references" / "level2_19_convtranspose2d_gelu_groupnorm.py"
    text = emit_reference(str(ref), conv="fused", autograd="cpp")[0]
    assert static_rule_violation(text) is None
    assert "class _Region0(" in text and "class _Region0ConvT(" in text and "_ext.region0(" not in text
    assert "Region0Backward" not in text and '"region0_forward"' in text
