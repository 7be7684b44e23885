"""A copy of an emitted solution with profiler scopes (RECORD_FUNCTION) at the points that split a region entry
point's host time: the C++ wrapper's body, its autograd node's making, region<i>_forward, the two-pass and resident
forwards, and in each backward node the backward call and the gradients' assembly. Each scope runs to the end of
its block, so kgen.bench.entry_timeline shows them nested. A measurement aid: the scopes are not in emitted files.

    python3 probe_patch.py SOLUTION.py OUT.py
"""
import re
import sys
from pathlib import Path


SCOPES = iter(range(1000))


def scope(name: str, indent: str = "  ") -> str:
    """A RecordFunction of its own name (RECORD_FUNCTION's, whose variable is always `guard`, twice in one block)."""
    var = f"kgen_probe_{next(SCOPES)}"
    return (f"{indent}at::RecordFunction {var}(at::RecordScope::FUNCTION);\n"
            f'{indent}if ({var}.isActive()) {var}.before("probe:{name}", c10::ArrayRef<const c10::IValue>{{}});\n')


def patch(text: str) -> str:
    count = 0

    def sub(pattern, repl, flags=re.M):
        nonlocal text, count
        text, n = re.subn(pattern, repl, text, flags=flags)
        count += n
        return n

    assert sub(r"^(at::Tensor (region\d+)\(\n(?:[^{;]*\n)*?[^{;]*\) \{\n)",
               lambda m: m.group(1) + scope(m.group(2) + " C++")) >= 1
    assert sub(r"^(  )(auto node = kgen_make_node<(\w+)>\(\);\n)",
               lambda m: scope(m.group(3) + " made and saved") + m.group(1) + m.group(2)) >= 1
    assert sub(r"^(std::vector<at::Tensor> (region\d+_forward)\(at::Tensor x,(?:[^{;]*\n)*?[^{;]*\) \{\n)",
               lambda m: m.group(1) + scope(m.group(2))) >= 1
    sub(r"^(std::vector<at::Tensor> (region_forward_twopass|region_forward_resident)\((?:[^{;]*\n)*?[^{;]*\) \{\n)",
        lambda m: m.group(1) + scope(m.group(2)))
    assert sub(r"^(    )(std::vector<at::Tensor> d = region\d+_backward\()",
               lambda m: scope("backward call", "    ") + m.group(1) + m.group(2)) >= 1
    assert sub(r"^(    )(torch::autograd::variable_list result\{d\[0\])",
               lambda m: scope("gradients assembled", "    ") + m.group(1) + m.group(2)) >= 1
    include = "#include <ATen/record_function.h>\n"
    text = text.replace('CUDA_SOURCE = r"""', 'CUDA_SOURCE = r"""' + include, 1)
    text = text.replace('CPP_SOURCE = r"""', 'CPP_SOURCE = r"""' + include, 1)
    print(f"probe_patch: {count} scopes", file=sys.stderr)
    return text


if __name__ == "__main__":
    Path(sys.argv[2]).write_text(patch(Path(sys.argv[1]).read_text()))
