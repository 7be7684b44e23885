"""What an emitted file carries of the reference's own source (a room of `kgen emit --ref`'s trace): Model.__init__
as ModelNew's, get_inputs and get_init_inputs as written, the top-level imports, constants, functions and classes
those read, and the reference's own functions that forward calls whole (torch.fx.wrap), called by name.
"""
from __future__ import annotations

import ast
import copy
from pathlib import Path

import torch
import torch.fx
import torch.nn.functional as F

from kgen.ref.errors import RefError, first_line
from kgen.ref.graph import meta_device


def init_source(tree: ast.Module, path: Path) -> str:
    """Model.__init__ as ModelNew's: the same statements (same modules, same parameters, same RNG draws,
    same attribute names), with `super(Model, self)` made `super(ModelNew, self)`."""
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Model")
    init = next((n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)
    if init is None:
        # nn.Module's own: a model whose modules are all made in forward (F.group_norm and the like) or none at all
        if not all(ast.unparse(base) in ("nn.Module", "torch.nn.Module", "Module") for base in cls.bases):
            raise RefError(f"{path}:{cls.lineno}: Model inherits its __init__ from "
                           f"{', '.join(ast.unparse(b) for b in cls.bases)}: kgen needs Model's own __init__ "
                           f"(or nn.Module's)")
        return "def __init__(self):\n    super().__init__()"
    init = copy.deepcopy(init)
    for node in ast.walk(init):
        if isinstance(node, ast.Name) and node.id == "Model":
            node.id = "ModelNew"
        if isinstance(node, ast.Expr) and isinstance(getattr(node, "value", None), ast.Constant) \
                and isinstance(node.value.value, str):
            node.value.value = ""  # docstrings dropped below
    init.body = [s for s in init.body
                 if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant) and s.value.value == "")]
    return ast.unparse(init)


def bound_names(statement: ast.stmt) -> set:
    if isinstance(statement, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in statement.names}
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {statement.name}
    if isinstance(statement, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
        return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return set()


def _loads(*parts) -> set:
    return {n.id for part in parts if part is not None for n in ast.walk(part)
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _signature_names(fn: ast.FunctionDef) -> set:
    """Names a function's signature reads where it is defined: defaults, annotations, decorators."""
    a = fn.args
    annotations = [x.annotation for x in a.posonlyargs + a.args + a.kwonlyargs + [a.vararg, a.kwarg] if x is not None]
    return _loads(*a.defaults, *[d for d in a.kw_defaults if d is not None], *annotations, fn.returns,
                  *fn.decorator_list)


def free_names(statement: ast.stmt) -> set:
    """The module-level names a top-level statement (or a method) reads: a function's body less its arguments
    and the names it assigns; a class's bases and every member."""
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
        a = statement.args
        arguments = {x.arg for x in a.posonlyargs + a.args + a.kwonlyargs + [a.vararg, a.kwarg] if x is not None}
        stored = {n.id for n in ast.walk(statement) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
        return _signature_names(statement) | (_loads(*statement.body) - arguments - stored)
    if isinstance(statement, ast.ClassDef):
        names = _loads(*statement.bases, *statement.decorator_list)
        for member in statement.body:
            names |= free_names(member)
        return names
    return _loads(statement)


def returning(name: str, values: list) -> ast.FunctionDef:
    """`def name(): return [values]`: a preset's get_init_inputs, with the values it was emitted for."""
    return ast.parse(f"def {name}():\n    return {values!r}\n").body[0]


def input_functions(tree: ast.Module) -> list:
    """get_inputs and get_init_inputs as the reference defines them: the emitted file carries them as they are (same
    distributions, dtypes and draws: `torch.randn` stays randn, an index tensor stays an index tensor), with the
    top-level definitions they read (prelude_source)."""
    return [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in ("get_inputs", "get_init_inputs")]


def check_carried_inputs(prelude: str, input_source: str, inputs: list, path: Path) -> None:
    """Runs the carried get_inputs (on the meta device) and get_init_inputs beside the carried prelude alone, as the
    emitted file will: a name they read that kgen did not carry (one bound inside an `if` at the top level) or
    another result is the reference's one-line error, not a file whose get_inputs fails."""
    namespace = {"torch": torch, "nn": torch.nn, "F": F}
    try:
        exec(compile(f"{prelude}\n\n\n{input_source}\n", f"{path} (as carried by kgen)", "exec"), namespace)
        with meta_device():
            carried = list(namespace["get_inputs"]())
        list(namespace["get_init_inputs"]())
    except Exception as error:  # noqa: BLE001 (the reference's own code, run as the emitted file will run it)
        raise RefError(f"{path}: get_inputs() or get_init_inputs(), carried into the emitted file with the top-level "
                       f"definitions they read, fails there ({type(error).__name__}: {first_line(error)}): bind what they "
                       "read with a plain top-level assignment, import or def") from None
    if _described(carried) != _described(inputs):
        raise RefError(f"{path}: get_inputs(), carried into the emitted file, returns {_described(carried)} there "
                       f"and {_described(inputs)} in the reference: bind what it reads with a plain top-level "
                       "assignment, import or def")


def _described(values: list) -> list:
    return [(tuple(v.shape), v.dtype) if isinstance(v, torch.Tensor) else (type(v).__name__,) for v in values]


REFERENCE_MODULE = "kgen_reference"   # the module the reference file is loaded as


def own_function(target) -> bool:
    """Whether a traced call's target is a function of the reference's own file (kept whole by torch.fx.wrap), which
    the emitted file carries and calls by name."""
    return callable(target) and getattr(target, "__module__", None) == REFERENCE_MODULE and \
        getattr(target, "__qualname__", "") == getattr(target, "__name__", None)


def rename_shadowing(gm: torch.fx.GraphModule, defined: set) -> None:
    """Renames the nodes whose names the reference's file defines at the top level (a function forward calls whole
    gives its node its name): as forward's local variables they would shadow what the emitted file carries."""
    for node in gm.graph.nodes:
        if node.name in defined:
            node._rename(f"{node.name}_value")


def own_functions_called(gm: torch.fx.GraphModule) -> set:
    """The names of the reference's own top-level functions that forward calls whole (torch.fx.wrap)."""
    return {n.target.__name__ for n in gm.graph.nodes if n.op == "call_function" and own_function(n.target)}


def prelude_source(tree: ast.Module, also_needed: set = frozenset()) -> str:
    """The reference's top-level imports, constants, functions and classes that ModelNew's copy of Model's code
    reads (Model.__init__, forward's signature) or the carried get_inputs() / get_init_inputs() do (`also_needed`),
    and what those read in turn: `import math`, a helper class, `Optional` in an annotation. The template's own
    imports (torch, nn, F) are always there."""
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Model")
    skip = {"Model", "get_inputs", "get_init_inputs"}
    defining = [s for s in tree.body if bound_names(s) and not (bound_names(s) & skip)]
    needed = _loads(*cls.bases, *cls.decorator_list) | set(also_needed)
    for member in cls.body:
        forward = isinstance(member, ast.FunctionDef) and member.name == "forward"
        needed |= _signature_names(member) if forward else free_names(member)
    taken: list[ast.stmt] = []
    grown = True
    while grown:
        grown = False
        for statement in defining:
            if statement not in taken and bound_names(statement) & needed:
                taken.append(statement)
                needed |= free_names(statement)
                grown = True
    kept = [s for s in tree.body if s in taken and not _template_import(s)]
    text = ""
    for statement in kept:
        spaced = isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        text += ("\n\n" if spaced and text else "") + ast.unparse(statement) + ("\n\n" if spaced else "") + "\n"
    return text.strip()


def _template_import(statement: ast.stmt) -> bool:
    """An import the solution template makes itself (import torch, torch.nn as nn, torch.nn.functional as F)."""
    if isinstance(statement, ast.Import):
        return all((a.name, a.asname) in {("torch", None), ("torch.nn", "nn"), ("torch.nn.functional", "F")}
                   for a in statement.names)
    return False
