"""A region's output dtype where a float32 cast lies inside it.

The trace runs in float32, where `.float()` / `.to(torch.float32)` return their operand and are dropped, as is the
cast of a GroupNorm's value back to its input's dtype (guided diffusion's GroupNorm32: `gn(x.float()).type(x.dtype)`)
(rewrite.drop_same_value_ops, which keeps their readers in the operand's meta: CAST_READERS). In a model run
in float64, float16 or bfloat16 such a cast changes the dtype of everything after it, so a region that holds one gives
its output the dtype PyTorch's type promotion gives it there: replayed here over the region's ops as an expression of
x's and the parameters' dtypes, rendered in Python (the autograd Function) and C++ (`--autograd cpp`). A region without
such a cast keeps the files' common rule (`_out_dtype`: x's dtype promoted with every parameter's, float32 under
autocast), and its file is unchanged.

An expression is a tuple: ("x",) x's dtype; ("float32",); ("param", k) parameter k's; ("gn", e) the GroupNorm of a
value of dtype e (float32 under autocast, e otherwise); ("promote", a, b).
"""
from __future__ import annotations

from kgen.ref.graph import is_metadata
from kgen.ref.ir import RegionStep
from kgen.ref.rewrite import CAST_READERS

X = ("x",)
FLOAT32 = ("float32",)


def promote(a: tuple, b: tuple) -> tuple:
    """PyTorch's promote_types of two dtype expressions (the same expression twice is itself)."""
    return a if a == b else ("promote", a, b)


def region_out_dtype(step: RegionStep, nodes: dict) -> tuple | None:
    """The dtype expression of the region's output where a dropped cast lies between two of its values (or before
    its GroupNorm), or every reader of its result reads it through one, else None. `nodes`: the traced graph's nodes
    by name."""
    biased = step.prologue[0].name if step.prologue and step.prologue[0].name == f"{step.input}_biased" else None

    def readers(name: str) -> dict:
        node = nodes.get(step.input if name == biased else name)
        return node.meta.get(CAST_READERS, {}) if node is not None else {}

    inside = {step.input, step.gn} | {n.name for n in step.prologue + step.epilogue}
    after = _cast_of_result(step, nodes, readers(step.result))
    if after is None and not any(set(readers(name)) & (inside - {name}) for name in inside):
        return None
    dtypes = {step.input: X}

    def target(source) -> tuple:   # None: float32; else a value's name, the GroupNorm's input (rewrite.py)
        return FLOAT32 if source is None else dtypes.get(source, X)

    def read(name: str, reader: str) -> tuple:
        casts = readers(name)
        return target(casts[reader]) if reader in casts else dtypes.get(name, X)

    def fold(node) -> tuple:
        found = None
        for operand in node.operands:
            if operand.is_value:
                dtype = read(operand.ref, node.name)
            elif operand.is_param and len(step.params[operand.ref].shape) > 0:   # a 0-dim one does not widen
                dtype = ("param", operand.ref)
            else:
                continue
            found = dtype if found is None else promote(found, dtype)
        return found if found is not None else X

    for node in step.prologue:
        dtypes[node.name] = fold(node)
    z = step.prologue[-1].name if step.prologue else step.input
    dtypes[step.gn] = ("gn", read(z, step.gn))
    for node in step.epilogue:
        dtypes[node.name] = fold(node)
    return target(after[0]) if after is not None else dtypes.get(step.result, dtypes[step.gn])


def _cast_of_result(step: RegionStep, nodes: dict, casts: dict) -> tuple | None:
    """(what it casts to,) where every reader of the region's result reads it through one dropped cast (a reduction
    the region takes, or the steps after it), else None: the region's output is then the cast's."""
    result = nodes.get(step.result)
    users = [u.name for u in result.users if not is_metadata(u)] if result is not None else []
    targets = {casts[u] for u in users if u in casts}
    if not users or len(targets) != 1 or any(u not in casts for u in users):
        return None
    return (targets.pop(),)


def python_dtype(expr: tuple) -> str:
    """The expression in the emitted Python (x: the region's input, params: its parameters)."""
    kind = expr[0]
    if kind == "x":
        return "x.dtype"
    if kind == "float32":
        return "torch.float32"
    if kind == "param":
        return f"params[{expr[1]}].dtype"
    if kind == "gn":
        return f"(torch.float32 if torch.is_autocast_enabled(x.device.type) else {python_dtype(expr[1])})"
    return f"torch.promote_types({python_dtype(expr[1])}, {python_dtype(expr[2])})"


def cpp_dtype(expr: tuple) -> str:
    """The expression in the emitted C++ autograd node (x, params as region<i>'s arguments)."""
    kind = expr[0]
    if kind == "x":
        return "x.scalar_type()"
    if kind == "float32":
        return "at::kFloat"
    if kind == "param":
        return f"params[{expr[1]}].scalar_type()"
    if kind == "gn":
        return f"(at::autocast::is_autocast_enabled(x.device().type()) ? at::kFloat : {cpp_dtype(expr[1])})"
    return f"at::promote_types({cpp_dtype(expr[1])}, {cpp_dtype(expr[2])})"
