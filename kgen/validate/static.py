"""Static checks: everything that can be said about a solution file without running it (no GPU).

Each check is a small function `Sources -> Check`, listed in `STATIC_CHECKS`; KernelBench's regular
expression rules are data in `RULES`. Adding a check is one line in either list.

The rules reproduce KernelBench's static checker (kernel_static_checker.py) with the same semantics: every
line is cut at its first `#` and then at its first `//`, and the patterns are searched in the whole
remaining text, strings and docstrings included (so the word `pass` in a docstring fails, and `// pass` in
a CUDA string does not). Where KernelBench only warns about CUDA streams we fail: the contract forbids them.
"""
from __future__ import annotations

import ast
import re
import sys
from dataclasses import dataclass
from typing import Callable

from kgen.validate.checks import Check, broken, failed, note, passed, skipped

INPUT_NAMES = ("get_inputs", "get_init_inputs")   # optional: the reference's are used where absent
ALLOWED_TOP_MODULES = frozenset({"torch"}) | frozenset(sys.stdlib_module_names)


@dataclass(frozen=True)
class Rule:
    """A KernelBench-style rule: the file fails if any pattern matches the comment-stripped text."""

    name: str
    patterns: tuple[str, ...]
    why: str


RULES: list[Rule] = [
    Rule("no try/except", (r"\btry\s*:", r"\bexcept\s*:", r"\bexcept\s+\w+"),
         "try/except fallbacks are rejected"),
    Rule("no pass", (r"\bpass\b",), "the word `pass` outside a # or // comment is rejected"),
    Rule("no timer monkey-patch", (r"torch\.cuda\.Event\.record\s*=", r"torch\.cuda\.Event\.elapsed_time\s*=",
                                   r"torch\.cuda\.synchronize\s*=", r"torch\.cuda\.Event\s*=",
                                   r"time\.perf_counter\s*=", r"time\.time\s*="),
         "reassigning timing functions is rejected"),
    Rule("no threads/processes", (r"threading\.Thread\s*\(", r"import\s+threading", r"from\s+threading\s+import",
                                  r"multiprocessing\.(Process|Pool|Manager|Queue|Pipe)", r"import\s+multiprocessing",
                                  r"concurrent\.futures", r"ThreadPoolExecutor", r"ProcessPoolExecutor"),
         "threads and processes are rejected"),
    Rule("no tensor subclass", (r"_make_subclass", r"class\s+\w+.*\(torch\.Tensor\)", r"class\s+\w+.*\(Tensor\)",
                                r"torch\.Tensor\.__new__"),
         "tensor subclasses / lazy tensors are rejected"),
    Rule("no extra CUDA streams", (r"torch\.cuda\.Stream\s*\(", r"cuda\.Stream\s*\(", r"with\s+torch\.cuda\.stream",
                                   r"\.wait_stream\s*\(", r"\.record_stream\s*\(", r"cudaStreamCreate",
                                   r"getStreamFromPool", r"torch\.cuda\.set_stream\s*\("),
         "extra CUDA streams are forbidden by the contract (KernelBench warns)"),
]


@dataclass(frozen=True)
class Sources:
    """The solution and the reference, as text and (where they parse) as syntax trees."""

    text: str
    ref_text: str
    stripped: str
    tree: ast.Module | None
    ref_tree: ast.Module | None
    syntax_error: str | None
    ref_syntax_error: str | None

    @classmethod
    def of(cls, text: str, ref_text: str) -> "Sources":
        tree, error = _parse(text)
        ref_tree, ref_error = _parse(ref_text)
        return cls(text, ref_text, strip_comments(text), tree, ref_tree, error, ref_error)


def _parse(text: str) -> tuple[ast.Module | None, str | None]:
    try:
        return ast.parse(text), None
    except SyntaxError as error:
        return None, f"line {error.lineno}: {error.msg}"


def strip_comments(code: str) -> str:
    """KernelBench's comment stripping: cut each line at its first `#`, then at its first `//`.
    Line numbers survive (one output line per input line)."""
    lines = []
    for line in code.split("\n"):
        if "#" in line:
            line = line[: line.index("#")]
        if "//" in line:
            line = line[: line.index("//")]
        lines.append(line)
    return "\n".join(lines)


def first_match(patterns, stripped: str) -> re.Match | None:
    """The earliest match of any pattern in the stripped text."""
    matches = [m for m in (re.search(p, stripped) for p in patterns) if m is not None]
    return min(matches, key=lambda m: m.start(), default=None)


def line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _quote_line(src: Sources, line: int) -> str:
    lines = src.text.split("\n")
    content = lines[line - 1].strip() if 0 < line <= len(lines) else ""
    return content if len(content) <= 80 else content[:77] + "..."


# ---- the checks --------------------------------------------------------------------------------------

def check_parses(src: Sources) -> Check:
    if src.syntax_error is not None:
        return broken("parses", f"syntax error, {src.syntax_error}")
    return passed("parses")


def _top_level_names(tree: ast.Module) -> dict[str, str]:
    """Top-level name -> what binds it ('class', 'def', 'assign', 'import')."""
    names: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            names[node.name] = "class"
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names[node.name] = "def"
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name):
                        names[name.id] = "assign"
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                names[(alias.asname or alias.name).split(".")[0]] = "import"
    return names


def check_defines(src: Sources) -> Check:
    name = "defines ModelNew"
    if src.tree is None:
        return skipped(name, "file does not parse")
    names = _top_level_names(src.tree)
    if "ModelNew" not in names:
        return broken(name, "missing at top level: ModelNew", missing=["ModelNew"])
    if names["ModelNew"] != "class":
        return broken(name, "ModelNew is not a class defined in the file")
    return passed(name)


def check_defines_inputs(src: Sources) -> Check:
    """KernelBench takes get_inputs and get_init_inputs from the reference; a solution may leave them out."""
    name = "defines get_inputs, get_init_inputs"
    if src.tree is None:
        return skipped(name, "file does not parse")
    names = _top_level_names(src.tree)
    missing = [n for n in INPUT_NAMES if n not in names]
    if missing:
        return note(name, f"not in the file: {', '.join(missing)}; the reference's are used (as KernelBench "
                          f"does)", missing=missing)
    return passed(name)


def _imported_modules(tree: ast.Module) -> list[tuple[str, int]]:
    """(module, line) for every import statement, and for __import__/importlib.import_module of a literal."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            found.append(("." * node.level + (node.module or ""), node.lineno))
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[0].value, str) and _call_name(node) in ("__import__", "import_module"):
            found.append((node.args[0].value, node.lineno))
    return found


def check_imports(src: Sources) -> Check:
    name = "imports: torch + stdlib only"
    if src.tree is None:
        return skipped(name, "file does not parse")
    bad = [(module, line) for module, line in _imported_modules(src.tree)
           if module.startswith(".") or module.split(".")[0] not in ALLOWED_TOP_MODULES]
    if bad:
        listed = ", ".join(f"{m} (line {line})" for m, line in bad)
        return failed(name, f"not torch or the standard library: {listed}", modules=[m for m, _ in bad],
                      line=bad[0][1])
    return passed(name)


def _call_name(call: ast.Call) -> str | None:
    if isinstance(call.func, ast.Name):
        return call.func.id
    if isinstance(call.func, ast.Attribute):
        return call.func.attr
    return None


def check_load_inline(src: Sources) -> Check:
    name = "calls load_inline"
    if src.tree is None:
        return skipped(name, "file does not parse")
    calls = [n.lineno for n in ast.walk(src.tree) if isinstance(n, ast.Call) and _call_name(n) == "load_inline"]
    if not calls:
        return failed(name, "no call of torch.utils.cpp_extension.load_inline")
    return passed(name, f"line {calls[0]}", line=calls[0])


def check_global_kernel(src: Sources) -> Check:
    name = "has a __global__ kernel"
    at = src.stripped.find("__global__")
    if at < 0:
        return failed(name, "no `__global__` outside comments")
    line = line_of(src.stripped, at)
    return passed(name, f"line {line}", line=line)


def rule_check(rule: Rule) -> Callable[[Sources], Check]:
    def check(src: Sources) -> Check:
        match = first_match(rule.patterns, src.stripped)
        if match is None:
            return passed(rule.name)
        line = line_of(src.stripped, match.start())
        return failed(rule.name, f"line {line}: {match.group(0)!r} in `{_quote_line(src, line)}` ({rule.why})",
                      line=line, match=match.group(0), pattern=match.re.pattern)

    check.__name__ = "check_" + re.sub(r"\W+", "_", rule.name)
    return check


@dataclass(frozen=True)
class InitSignature:
    params: tuple[tuple[str, str, str | None], ...]   # (kind, name, default) with kind in "/", "", "*", "kw", "**"
    inherited: bool = False

    def render(self) -> str:
        if self.inherited:
            return "(inherited from nn.Module: *args, **kwargs)"
        parts = []
        for i, (kind, name, default) in enumerate(self.params):
            before = self.params[i - 1][0] if i else None
            after = self.params[i + 1][0] if i + 1 < len(self.params) else None
            if kind == "kw" and before not in ("kw", "*"):
                parts.append("*")
            parts.append({"*": "*", "**": "**"}.get(kind, "") + name + ("" if default is None else "=" + default))
            if kind == "/" and after != "/":
                parts.append("/")
        return "(" + ", ".join(parts) + ")"


def _default_text(node: ast.expr | None) -> str | None:
    if node is None:
        return None
    try:
        return repr(ast.literal_eval(node))   # 1e-5 and 0.00001 are the same default
    except ValueError:
        return ast.unparse(node)


def _find_class(tree: ast.Module, name: str) -> ast.ClassDef | None:
    found = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name]
    return found[-1] if found else None


# The bases whose __init__ is nn.Module's own (which takes no arguments).
_MODULE_BASES = {"nn.Module", "torch.nn.Module", "Module", "object"}


class UnknownInit(Exception):
    """The class inherits its __init__ from a base the file does not define (imported): its signature is unknown."""


def init_signature(tree: ast.Module, class_name: str, _seen: frozenset = frozenset()) -> InitSignature | None:
    """The `__init__` parameters of a top-level class, or None if there is no such class. A class without its own
    __init__ takes its first base's that the file defines (as Python's MRO does for single inheritance), nn.Module's
    (`inherited`) where that base is nn.Module; raises UnknownInit where the base is defined elsewhere."""
    cls = _find_class(tree, class_name)
    if cls is None:
        return None
    inits = [n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"]
    if not inits:
        for base in map(ast.unparse, cls.bases):
            if base in _MODULE_BASES:
                continue
            if _find_class(tree, base) is None or base in _seen:
                raise UnknownInit(base)
            found = init_signature(tree, base, _seen | {class_name})
            if not found.inherited:
                return found
        return InitSignature((), inherited=True)
    a = inits[-1].args
    positional = a.posonlyargs + a.args
    defaults = [None] * (len(positional) - len(a.defaults)) + list(a.defaults)
    params = [("/" if i < len(a.posonlyargs) else "", arg.arg, _default_text(d))
              for i, (arg, d) in enumerate(zip(positional, defaults))]
    if a.vararg:
        params.append(("*", a.vararg.arg, None))
    params += [("kw", arg.arg, _default_text(d)) for arg, d in zip(a.kwonlyargs, a.kw_defaults)]
    if a.kwarg:
        params.append(("**", a.kwarg.arg, None))
    return InitSignature(tuple(params))


def _takes_nothing(signature: InitSignature) -> bool:
    """nn.Module's own __init__ (inherited) and `__init__(self)` accept the same calls: none with arguments."""
    return signature.inherited or signature.params == (("", "self", None),)


def check_init_signature(src: Sources) -> Check:
    name = "ModelNew.__init__ signature"
    if src.ref_tree is None:
        return broken(name, f"the reference does not parse: {src.ref_syntax_error}")
    try:
        expected = init_signature(src.ref_tree, "Model")
    except UnknownInit as base:
        return skipped(name, f"the reference's Model takes its __init__ from {base}, which it imports")
    if expected is None:
        return broken(name, "the reference defines no class Model")
    if src.tree is None:
        return skipped(name, "file does not parse")
    try:
        actual = init_signature(src.tree, "ModelNew")
    except UnknownInit as base:
        return skipped(name, f"ModelNew takes its __init__ from {base}, which the file imports")
    if actual is None:
        return skipped(name, "no class ModelNew")
    if actual != expected and not (_takes_nothing(actual) and _takes_nothing(expected)):
        return failed(name, f"ModelNew{actual.render()} != Model{expected.render()}",
                      expected=expected.render(), actual=actual.render())
    return passed(name, expected.render())


STATIC_CHECKS: list[Callable[[Sources], Check]] = [
    check_parses,
    check_defines,
    check_defines_inputs,
    check_imports,
    check_load_inline,
    check_global_kernel,
    *(rule_check(rule) for rule in RULES),
    check_init_signature,
]


def static_checks(source: str, ref_source: str) -> list[Check]:
    """Every static check of a solution's text against its reference's text, in order."""
    src = Sources.of(source, ref_source)
    return [check(src) for check in STATIC_CHECKS]
