"""Static checks: one hand-written bad solution per rejected pattern, KernelBench's comment stripping,
the __init__ signature comparison and the import rule."""
import pytest

from kgen.validate.static import (RULES, STATIC_CHECKS, init_signature, static_checks, strip_comments)
from tests.validate.helpers import FILES, REFERENCE

REF_TEXT = REFERENCE.read_text()
WRAPPER = FILES / "good.py.txt"

# file -> (the one check that fails, whether that makes the file broken)
EXPECTED = {
    "try_except": ("no try/except", False),
    "pass_statement": ("no pass", False),
    "threading": ("no threads/processes", False),
    "multiprocessing": ("no threads/processes", False),
    "stream": ("no extra CUDA streams", False),
    "cuda_stream_create": ("no extra CUDA streams", False),
    "tensor_subclass": ("no tensor subclass", False),
    "timer_patch": ("no timer monkey-patch", False),
    "numpy_import": ("imports: torch + stdlib only", False),
    "wrong_init": ("ModelNew.__init__ signature", False),
    "syntax_error": ("parses", True),
    "missing_modelnew": ("defines ModelNew", True),
    "no_load_inline": ("calls load_inline", False),
    "no_global_kernel": ("has a __global__ kernel", False),
}

# the first line of each file where its rule's pattern matches, found by a marker in the text
MARKERS = {"try_except": "try:", "pass_statement": "    pass", "threading": "import threading",
           "multiprocessing": "import multiprocessing", "stream": "torch.cuda.Stream()",
           "cuda_stream_create": "cudaStreamCreate", "tensor_subclass": "class LazyResult",
           "timer_patch": "torch.cuda.synchronize =", "numpy_import": "import numpy"}


def checks_of(name):
    return static_checks((FILES / f"{name}.py.txt").read_text(), REF_TEXT)


def failures(checks):
    return [c for c in checks if c.ok is False]


def test_good_file_passes_every_static_check():
    checks = checks_of("good")
    assert failures(checks) == []
    assert len(checks) == len(STATIC_CHECKS)
    assert all(c.ok is True for c in checks)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_bad_file_fails_exactly_its_check(name):
    check_name, is_broken = EXPECTED[name]
    bad = failures(checks_of(name))
    assert [c.name for c in bad] == [check_name], [(c.name, c.detail) for c in bad]
    assert bad[0].broken is is_broken
    assert bad[0].verdict == "FAIL"


@pytest.mark.parametrize("name", sorted(MARKERS))
def test_failure_reports_the_line_of_the_first_match(name):
    text = (FILES / f"{name}.py.txt").read_text()
    line = next(i for i, l in enumerate(text.splitlines(), 1) if MARKERS[name] in l)
    bad = failures(checks_of(name))[0]
    assert bad.data["line"] == line
    assert f"line {line}" in bad.detail


def rule_verdicts(snippet: str) -> dict:
    """{rule name: ok} for a snippet placed in the good file (so only the rules can fail)."""
    text = WRAPPER.read_text() + "\n" + snippet + "\n"
    return {c.name: c.ok for c in static_checks(text, REF_TEXT) if c.name in {r.name for r in RULES}}


@pytest.mark.parametrize("snippet, ok", [
    ("x = 1  # pass", True),                          # a '#' comment is cut away
    ("y = '''\n  int a = 0; // pass\n'''", True),     # a '//' comment in CUDA text is cut away too
    ('NOTE = "pass"', False),                          # strings count: KernelBench does not parse
    ('"""Docstrings pass through the check too."""', False),
    ("bypass = 1", True),                              # whole words only
    ("passes = 2", True),
    ("url = 'http://x/pass'", True),                   # cut at the first '//', even inside a string
    ("s = '#'; pass_ = 1; pass", True),                # cut at the first '#', even inside a string
])
def test_pass_rule_follows_kernelbench_comment_stripping(snippet, ok):
    assert rule_verdicts(snippet)["no pass"] is ok


@pytest.mark.parametrize("snippet, rule", [
    ("def f():\n    try:\n        return 1\n    finally:\n        return 2", "no try/except"),
    ("TEXT = 'except ValueError'", "no try/except"),
    ("import concurrent.futures", "no threads/processes"),
    ("from threading import Thread", "no threads/processes"),
    ("time.perf_counter = None", "no timer monkey-patch"),
    ("torch.cuda.Event = object", "no timer monkey-patch"),
    ("t = torch.Tensor._make_subclass", "no tensor subclass"),
    ("s = torch.cuda.current_stream(); s.wait_stream(s)", "no extra CUDA streams"),
    ("y.record_stream(s)", "no extra CUDA streams"),
    ("CUDA = 'auto s = at::cuda::getStreamFromPool();'", "no extra CUDA streams"),
    ("torch.cuda.set_stream(s)", "no extra CUDA streams"),
])
def test_rule_patterns(snippet, rule):
    verdicts = rule_verdicts(snippet)
    assert verdicts[rule] is False
    assert [name for name, ok in verdicts.items() if ok is False] == [rule]


def test_comment_stripping_keeps_line_numbers():
    code = "a = 1  # x\nb = 'x' // y\n#only\nc = 3"
    stripped = strip_comments(code)
    assert stripped.split("\n") == ["a = 1  ", "b = 'x' ", "", "c = 3"]


def test_no_global_kernel_when_it_is_only_in_a_comment():
    text = (WRAPPER.read_text().replace("__global__ void", "void").replace("// y = (x", "// __global__ y = (x")
            + "\n# __global__\n")
    bad = failures(static_checks(text, REF_TEXT))
    assert [c.name for c in bad] == ["has a __global__ kernel"]


@pytest.mark.parametrize("solution_init, ok", [
    ("def __init__(self, num_features: int, num_groups: int):", True),
    ("def __init__(self, num_features, num_groups):", True),                  # annotations do not matter
    ("def __init__(self, num_features: int, num_groups: int = 8):", False),   # a default the reference lacks
    ("def __init__(self, features: int, num_groups: int):", False),          # another name
    ("def __init__(self, num_features: int, num_groups: int, *args):", False),
])
def test_init_signature_against_the_reference(solution_init, ok):
    text = WRAPPER.read_text().replace("def __init__(self, num_features: int, num_groups: int):", solution_init)
    check = next(c for c in static_checks(text, REF_TEXT) if c.name == "ModelNew.__init__ signature")
    assert check.ok is ok, check.detail


def test_init_signature_defaults_compare_by_value():
    import ast

    a = init_signature(ast.parse("class M:\n    def __init__(self, a, eps=1e-5):\n        self.a = a"), "M")
    b = init_signature(ast.parse("class M:\n    def __init__(self, a, eps=0.00001):\n        self.a = a"), "M")
    assert a == b
    assert a.render() == "(self, a, eps=1e-05)"


def test_imports_allow_torch_submodules_and_stdlib_only():
    base = WRAPPER.read_text()
    ok = base + "\nimport os, json\nfrom torch.utils import benchmark\nimport torch.nn.functional as F\n"
    assert all(c.ok for c in static_checks(ok, REF_TEXT))
    for bad_import in ("import triton", "from numpy import zeros", "from . import helper",
                       "mod = __import__('scipy')", "import importlib\nm = importlib.import_module('cupy')"):
        bad = failures(static_checks(base + "\n" + bad_import + "\n", REF_TEXT))
        assert [c.name for c in bad] == ["imports: torch + stdlib only"], bad_import


def test_reference_without_model_class_is_broken():
    checks = static_checks(WRAPPER.read_text(), "import torch\n")
    bad = failures(checks)
    assert [c.name for c in bad] == ["ModelNew.__init__ signature"]
    assert bad[0].broken


def test_adding_a_rule_is_one_entry():
    from kgen.validate.static import Rule, rule_check

    check = rule_check(Rule("no printf", (r"\bprintf\s*\(",), "debug output"))
    from kgen.validate.static import Sources

    result = check(Sources.of('CUDA = r"""\n  printf("%d", 1);\n"""', REF_TEXT))
    assert result.ok is False and result.data["line"] == 2


@pytest.mark.parametrize("reference_init, solution_init, ok", [
    ("", "    def __init__(self):\n        super().__init__()\n", True),    # nn.Module's own takes no arguments
    ("    def __init__(self):\n        super().__init__()\n", "", True),
    ("", "", True),
    ("", "    def __init__(self, groups):\n        super().__init__()\n", False),
    ("", "    def __init__(self, *args):\n        super().__init__()\n", False),
])
def test_an_inherited_init_is_one_that_takes_nothing(reference_init, solution_init, ok):
    import ast

    from kgen.validate.static import check_init_signature
    from kgen.validate.static import Sources

    body = "    def forward(self, x):\n        return x\n"
    ref = f"import torch.nn as nn\nclass Model(nn.Module):\n{reference_init}{body}"
    new = f"import torch.nn as nn\nclass ModelNew(nn.Module):\n{solution_init}{body}"
    assert ast.parse(ref) and ast.parse(new)
    check = check_init_signature(Sources.of(new, ref))
    assert check.ok is ok, check.detail


@pytest.mark.parametrize("solution_init, ok", [
    ("    def __init__(self, channels, groups):\n        super().__init__()\n", True),   # the base's, as Python runs
    ("    def __init__(self):\n        super().__init__()\n", False),
])
def test_a_model_without_its_own_init_takes_its_bases(solution_init, ok):
    from kgen.validate.static import Sources, check_init_signature

    ref = ("import torch.nn as nn\nclass Base(nn.Module):\n    def __init__(self, channels, groups):\n"
           "        super().__init__()\nclass Middle(Base):\n    pass_through = 1\n"
           "class Model(Middle):\n    def forward(self, x):\n        return x\n")
    new = f"import torch.nn as nn\nclass ModelNew(nn.Module):\n{solution_init}    def forward(self, x):\n        return x\n"
    check = check_init_signature(Sources.of(new, ref))
    assert check.ok is ok, check.detail


def test_a_model_whose_init_comes_from_an_imported_base_is_not_judged():
    from kgen.validate.static import Sources, check_init_signature

    ref = "import torch.nn as nn\nclass Model(nn.Sequential):\n    def forward(self, x):\n        return x\n"
    new = "import torch.nn as nn\nclass ModelNew(nn.Module):\n    def __init__(self, a):\n        super().__init__()\n"
    check = check_init_signature(Sources.of(new, ref))
    assert check.ok is None and "nn.Sequential" in check.detail
