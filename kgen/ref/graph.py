"""Helpers on the traced fx graph that the planner's parts share (plan.py, plan_reductions.py,
plan_batchnorm.py), and the reference's spelling of an op for error messages (trace.py, guards.py)."""
from __future__ import annotations

import ast
import contextlib
import copy
import keyword
import operator

import torch
import torch.nn as nn
import torch.nn.functional as F

# Modules whose bias a kgen step can take over (add in a region, or drop before a batch norm).
PEELABLE = (nn.Conv1d, nn.Conv2d, nn.Conv3d, nn.ConvTranspose1d, nn.ConvTranspose2d, nn.ConvTranspose3d, nn.Linear)


def names_of(nodes) -> set:
    """The graph nodes a list of PwNodes computes: each one, and the comparison a where folds in."""
    return {n.name for n in nodes} | {n.folded for n in nodes if n.folded}


# Tensors made with another's shape, dtype and device, none of its values (torch.zeros_like(y)...).
LIKE_FUNCTIONS = (torch.zeros_like, torch.ones_like, torch.full_like, torch.empty_like)


def is_metadata(node) -> bool:
    """x.device / x.dtype / x.shape / x.size() / x.dim() / torch.zeros_like(x): reads no data (the emitted code
    takes them from the region's input, whose shape every value before a region's reduction has)."""
    if node.op == "call_method" and node.target in ("size", "dim"):
        return True
    if node.op == "call_function" and node.target in LIKE_FUNCTIONS:
        return True
    return node.op == "call_function" and node.target is getattr and len(node.args) > 1 and \
        node.args[1] in ("device", "dtype", "shape", "ndim")


_INT_OPS = {operator.add: operator.add, operator.sub: operator.sub, operator.mul: operator.mul,
            operator.floordiv: operator.floordiv, operator.mod: operator.mod}


def static_int(value):
    """An int argument's value for the traced input shapes: a constant, or one computed in forward from tensors'
    shapes (`x.shape[1] // 4`, `x.size(1)`) and ints; None where it depends on anything else."""
    if isinstance(value, bool) or not isinstance(value, (int, torch.fx.Node)):
        return None
    if isinstance(value, int):
        return value
    node = value
    if node.op == "call_function" and node.target in _INT_OPS and len(node.args) == 2:
        a, b = (static_int(arg) for arg in node.args)
        return None if a is None or b is None or (b == 0 and node.target in (operator.floordiv, operator.mod)) \
            else _INT_OPS[node.target](a, b)
    if node.op == "call_function" and node.target is operator.getitem and isinstance(node.args[1], int):
        return _dim(_static_shape(node.args[0]), node.args[1])
    if node.op == "call_method" and node.target in ("numel", "dim", "size") and len(node.args) in (1, 2):
        shape = _shape_of(node.args[0])
        if shape is None:
            return None
        if node.target == "size" and len(node.args) == 2 and isinstance(node.args[1], int):
            return _dim(shape, node.args[1])
        if len(node.args) == 1 and node.target != "size":
            return len(shape) if node.target == "dim" else int(torch.Size(shape).numel())
    return None


def _dim(shape, index: int):
    """shape[index] where `shape` is known and has that dim, else None."""
    return shape[index] if shape is not None and -len(shape) <= index < len(shape) else None


def _static_shape(value):
    """`x.shape` or `x.size()` of a traced tensor: its shape as a tuple of ints, else None."""
    if not isinstance(value, torch.fx.Node):
        return None
    if (value.op == "call_function" and value.target is getattr and value.args[1] == "shape") or \
            (value.op == "call_method" and value.target == "size" and len(value.args) == 1):
        return _shape_of(value.args[0])
    return None


def _shape_of(tensor):
    """A traced tensor's shape (its meta from the trace), else None."""
    meta = tensor.meta.get("tensor_meta") if isinstance(tensor, torch.fx.Node) else None
    return tuple(int(d) for d in meta.shape) if meta is not None and hasattr(meta, "shape") else None


def is_parameter(gm, target) -> bool:
    return any(name == target for name, _ in gm.named_parameters())


def get_attribute(gm, target):
    value = gm
    for part in target.split("."):
        value = getattr(value, part)
    return value


def as_tuple(value, dims):
    return tuple(value) if isinstance(value, (tuple, list)) else (value,) * dims


def self_attr(target: str, root: nn.Module) -> str:
    """The Python expression ModelNew reads a module or tensor of the traced graph by: `self.conv.weight`,
    `self.block[0].bias` (an nn.Sequential / ModuleList / ParameterList index), `getattr(self.heads, 'a-b')`."""
    expr, owner = "self", root
    for part in target.split("."):
        if part.isdigit() and isinstance(owner, (nn.Sequential, nn.ModuleList, nn.ParameterList)):
            expr += f"[{part}]"
        elif part.isidentifier() and not keyword.iskeyword(part):
            expr += f".{part}"
        else:
            expr = f"getattr({expr}, {part!r})"
        owner = getattr(owner, part, None)
    return expr


# Views that keep a tensor's order: a parameter read through a chain of them is still read as C values.
ORDER_KEEPING_METHODS = {"view", "reshape", "unsqueeze", "squeeze", "flatten"}
ORDER_KEEPING_FUNCTIONS = {torch.reshape, torch.unsqueeze, torch.squeeze, torch.flatten}


def _new_axes_only(index) -> bool:
    """An index of None, `:` and `...` only (w[None, :, None, None]): a view that only adds axes."""
    items = index if isinstance(index, tuple) else (index,)
    return all(i is None or i is Ellipsis or (isinstance(i, slice) and i == slice(None)) for i in items)


def param_view_root(value):
    """The get_attr node under `value` and its chain of order-keeping views, or None."""
    while isinstance(value, torch.fx.Node) and value.op != "get_attr":
        if not value.args or not isinstance(value.args[0], torch.fx.Node):
            return None
        order_keeping = (
            (value.op == "call_method" and value.target in ORDER_KEEPING_METHODS) or
            (value.op == "call_function" and value.target in ORDER_KEEPING_FUNCTIONS) or
            (value.op == "call_function" and value.target is operator.getitem and len(value.args) == 2 and
             _new_axes_only(value.args[1])))
        if not order_keeping:
            return None
        value = value.args[0]
    return value if isinstance(value, torch.fx.Node) else None


def attribute_arguments(line: str, model, functions: set, wanted: dict) -> dict:
    """keyword -> `self.<attribute>` where the source line's one call of a function named in `functions` passes that
    argument as an attribute of the model holding the traced value (`F.group_norm(x, self.groups, w, b, self.eps)`,
    `F.max_pool2d(y, self.k)`). fx hands the planner the values only; written as literals, a ModelNew built with
    other init arguments would compute with the reference's. `wanted`: keyword -> (position, traced value)."""
    try:
        tree = ast.parse(line.strip())
    except SyntaxError:   # a call spread over lines: the traced literal stays
        return {}
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and
             getattr(n.func, "attr", getattr(n.func, "id", None)) in functions]
    if len(calls) != 1:
        return {}
    call, found = calls[0], {}
    for keyword_name, (position, value) in wanted.items():
        given = next((k.value for k in call.keywords if k.arg == keyword_name), None)
        if given is None and len(call.args) > position:
            given = call.args[position]
        names, root = [], given
        while isinstance(root, ast.Attribute):
            names.insert(0, root.attr)
            root = root.value
        if not names or not (isinstance(root, ast.Name) and root.id == "self"):
            continue
        held = model
        for name in names:
            held = getattr(held, name, None)
        same = type(held) in (int, float) and held == value or \
            isinstance(held, (tuple, list)) and isinstance(value, (tuple, list)) and list(held) == list(value)
        if same:
            found[keyword_name] = ast.unparse(given)
    return found


# Python's operators, for an op traced from one (`a + b` is operator.add in the graph).
_OPERATOR_SYMBOLS = {"add": "+", "sub": "-", "mul": "*", "truediv": "/", "floordiv": "//", "mod": "%", "pow": "**",
                     "matmul": "@", "neg": "unary -", "getitem": "[...]", "and_": "&", "or_": "|", "xor": "^",
                     "invert": "~", "lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!="}


def op_text(node: torch.fx.Node, modules: dict | None = None) -> str:
    """An op as the reference writes it (`torch.cumsum`, `F.gelu`, `.view()`, `self.conv` (Conv2d), `+`), not as
    the graph names it (call_function, call_method, node names)."""
    if node.op == "call_module":
        module = (modules or {}).get(node.target)
        return f"`self.{node.target}`" + (f" ({type(module).__name__})" if module is not None else "")
    if node.op == "call_method":
        return f"`.{node.target}()`"
    if node.op == "get_attr":
        return f"`self.{node.target}`"
    if node.op == "placeholder":
        return f"the input `{node.target}`"
    if node.op == "call_function":
        return f"`{function_name(node.target)}`"
    return "the returned value"


def function_name(function) -> str:
    """`torch.cumsum`, `F.relu`, `torch.special.expit`, `+`: the spelling a reference would use."""
    name = getattr(function, "__name__", str(function))
    if getattr(operator, name, None) is function:
        return _OPERATOR_SYMBOLS.get(name, f"operator.{name}")
    for prefix, namespace in (("torch", torch), ("F", F), ("torch.special", torch.special),
                              ("torch.linalg", torch.linalg), ("torch.fft", torch.fft)):
        if getattr(namespace, name, None) is function:
            return f"{prefix}.{name}"
    module = getattr(function, "__module__", None)
    return f"{module}.{name}" if module else name


def library_class(module, table: dict):
    """The torch.nn class of `table` that `module` is an instance of, or None: a weight-normalised or spectral-normed
    conv is a subclass torch makes (ParametrizedConv1d), its weight the parametrization's; a lazy batch norm one of
    BatchNorm2d."""
    return next((cls for cls in type(module).__mro__ if cls in table), None)


def peelable(module) -> bool:
    """A conv / linear module whose bias a kgen step may take over (the file then calls its weight alone,
    _conv_forward or F.linear): one with a bias, whose call is its forward alone. A module with forward hooks (the
    hook-based torch.nn.utils.spectral_norm and weight_norm recompute `weight` in a pre-hook) is called whole."""
    return isinstance(module, PEELABLE) and module.bias is not None and not module._forward_pre_hooks and \
        not module._forward_hooks


def copied(module):
    """copy.deepcopy(module), where a module may hold a tensor autograd made as a plain attribute (the hook-based
    torch.nn.utils.weight_norm keeps `weight` so, and a deepcopy of a non-leaf tensor raises): those are copied
    detached (their hook recomputes them at each call)."""
    memo = {id(value): value.detach().clone() for m in module.modules() for value in vars(m).values()
            if isinstance(value, torch.Tensor) and not value.is_leaf}
    return copy.deepcopy(module, memo)


class _DevicesToMeta(torch.overrides.TorchFunctionMode):
    """Tensors a get_inputs() puts on a device itself (`.cuda()`, `.to("cuda")`, `device="cuda"`) made on the meta
    device instead: kgen reads their shapes and dtypes only, on a machine that may have no GPU."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if func in (torch.Tensor.cuda, torch.Tensor.cpu):
            return args[0]
        if func is torch.Tensor.to:   # a device given by position: `x.to("cuda")`, `x.to(device, dtype)`
            args = tuple("meta" if isinstance(a, (str, torch.device)) else a for a in args)
        kwargs = {k: "meta" if k == "device" else v for k, v in (kwargs or {}).items()}
        return func(*args, **kwargs)


@contextlib.contextmanager
def meta_device():
    """Tensors made inside on the meta device, whatever device the code asks for (get_inputs())."""
    with torch.device("meta"), _DevicesToMeta():
        yield
