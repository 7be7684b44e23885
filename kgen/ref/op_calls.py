"""Which PyTorch call is which op of the op table (ops.py): `recognise(node, module)` maps one torch.fx node (a
function, a tensor method or an activation module) to an ElementwiseCall (op name, operands, constants), or None where
the call is not one kgen fuses as it stands (an in-place call, a tensor-valued constant, a keyword that changes the
op's rounding)."""
from __future__ import annotations

import operator
from dataclasses import dataclass, replace

import torch
import torch.fx
import torch.nn as nn
import torch.nn.functional as F

from kgen.ref.ops import COMPARISON_SYMBOLS, where_op


@dataclass(frozen=True)
class ElementwiseCall:
    """An element-wise op as `recognise` reads it off one fx node: its name in OPS, its operands as the node passes
    them (fx nodes or Python numbers, in the op's order a, b, c, d) and its named constants (`slope`, `lo`...). The
    planner turns the operands into the Plan's `Operand`s (plan.py: Planner.operands) and the call into a PwNode."""
    op: str
    operands: tuple
    consts: dict

    def __post_init__(self):
        object.__setattr__(self, "operands", tuple(self.operands))


INF = float("inf")


def _scalar(value) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    return None


def _unary(name, consts=None):
    return lambda args, kwargs: ElementwiseCall(name, [args[0]], dict(consts or {}))


def _clamp(args, kwargs):
    lo = kwargs.get("min", args[1] if len(args) > 1 else None)
    hi = kwargs.get("max", args[2] if len(args) > 2 else None)
    return ElementwiseCall("clamp", [args[0]], {"lo": -INF if lo is None else lo, "hi": INF if hi is None else hi})


def _clamp_min(args, kwargs):
    return ElementwiseCall("clamp", [args[0]], {"lo": kwargs.get("min", args[1] if len(args) > 1 else None),
                                               "hi": INF})


def _clamp_max(args, kwargs):
    return ElementwiseCall("clamp", [args[0]], {"lo": -INF,
                                               "hi": kwargs.get("max", args[1] if len(args) > 1 else None)})


def _gelu(args, kwargs):
    approximate = kwargs.get("approximate", args[1] if len(args) > 1 else "none")
    return ElementwiseCall("gelu_tanh" if approximate == "tanh" else "gelu_erf", [args[0]], {})


def _leaky(args, kwargs):
    return ElementwiseCall("leaky_relu", [args[0]],
                           {"slope": kwargs.get("negative_slope", args[1] if len(args) > 1 else 0.01)})


def _hardtanh(args, kwargs):
    return ElementwiseCall("hardtanh", [args[0]], {"lo": kwargs.get("min_val", args[1] if len(args) > 1 else -1.0),
                                                  "hi": kwargs.get("max_val", args[2] if len(args) > 2 else 1.0)})


def _softplus(args, kwargs):
    return ElementwiseCall("softplus", [args[0]],
                           {"beta": kwargs.get("beta", args[1] if len(args) > 1 else 1.0),
                            "threshold": kwargs.get("threshold", args[2] if len(args) > 2 else 20.0)})


def _alpha(name):
    return lambda args, kwargs: ElementwiseCall(name, [args[0]],
                                                {"alpha": kwargs.get("alpha", args[1] if len(args) > 1 else 1.0)})


def _threshold(args, kwargs):
    return ElementwiseCall("threshold", [args[0]],
                           {"threshold": kwargs.get("threshold", args[1] if len(args) > 1 else None),
                            "value": kwargs.get("value", args[2] if len(args) > 2 else None)})


def _shrink(name):
    return lambda args, kwargs: ElementwiseCall(name, [args[0]],
                                                {"lambd": kwargs.get("lambd", args[1] if len(args) > 1 else 0.5)})


def _prelu(args, kwargs):
    weight = kwargs.get("weight", args[1] if len(args) > 1 else None)
    return ElementwiseCall("prelu", [args[0], weight], {}) if weight is not None else None


def _addc(name):
    def make(args, kwargs):
        if len(args) != 3 or set(kwargs) - {"value"} or _scalar(kwargs.get("value", 1.0)) is None:
            return None
        return ElementwiseCall(name, list(args), {"value": kwargs.get("value", 1.0)})
    return make


def _lerp(args, kwargs):
    weight = kwargs.get("weight", args[2] if len(args) > 2 else None)
    if len(args) < 2 or weight is None or set(kwargs) - {"weight"}:
        return None
    return ElementwiseCall("lerp", [args[0], args[1], weight], {})


def _pow(args, kwargs):
    # a tensor to a constant power; a scalar to a tensor power (torch.pow(2, x)) is not element-wise here
    exponent = kwargs.get("exponent", args[1] if len(args) > 1 else None)
    if _scalar(args[0]) is not None or _scalar(exponent) is None:
        return None
    return ElementwiseCall("pow", [args[0]], {"p": exponent})


_COMPARISON_FUNCTIONS = {operator.gt: "gt", operator.lt: "lt", operator.ge: "ge", operator.le: "le",
                         operator.eq: "eq", operator.ne: "ne", torch.gt: "gt", torch.lt: "lt", torch.ge: "ge",
                         torch.le: "le", torch.eq: "eq", torch.ne: "ne", torch.greater: "gt", torch.less: "lt",
                         torch.greater_equal: "ge", torch.less_equal: "le"}


def comparison(node) -> str | None:
    """gt / lt / ge / le / eq / ne for a two-operand comparison node (`a > b`, `torch.gt(a, b)`, `a.gt(b)`),
    else None."""
    if len(getattr(node, "args", ())) != 2 or node.kwargs:
        return None
    if node.op == "call_function" and node.target in _COMPARISON_FUNCTIONS:
        return _COMPARISON_FUNCTIONS[node.target]
    if node.op == "call_method" and node.target in COMPARISON_SYMBOLS:
        return node.target
    return None


def _where(args, kwargs):
    if len(args) != 3 or kwargs:
        return None
    cond, a, b = args
    cmp = comparison(cond) if isinstance(cond, torch.fx.Node) else None
    if cmp is None or len(cond.users) != 1:
        return None  # a condition tensor from elsewhere, or one read twice: PyTorch's where
    return ElementwiseCall(where_op(cmp), [cond.args[0], cond.args[1], a, b], {})


def _masked_fill(args, kwargs):
    """`x.masked_fill(a CMP b, v)` is `where(a CMP b, v, x)`, value and gradient (masked_fill's backward masks the
    gradient of x where the mask holds, and gives v the sum of the rest, as where's does)."""
    mask = kwargs.get("mask", args[1] if len(args) > 1 else None)
    value = kwargs.get("value", args[2] if len(args) > 2 else None)
    if set(kwargs) - {"mask", "value"} or value is None:
        return None
    cmp = comparison(mask) if isinstance(mask, torch.fx.Node) else None
    if cmp is None or len(mask.users) != 1:
        return None  # a bool mask from elsewhere, or one read twice: PyTorch's masked_fill
    return ElementwiseCall(where_op(cmp), [mask.args[0], mask.args[1], value, args[0]], {})


def folded_condition(node):
    """The comparison node a where-like op (torch.where, masked_fill) computes inside itself, else None."""
    if node.op == "call_function" and node.target is torch.where:
        return node.args[0] if node.args else None
    if (node.op == "call_method" and node.target == "masked_fill") or \
            (node.op == "call_function" and node.target is torch.masked_fill):
        return node.kwargs.get("mask", node.args[1] if len(node.args) > 1 else None)
    return None


# Keywords a binary op may carry and still be the plain op: `alpha` only at 1 (PyTorch computes a + alpha * b in
# one expression whose rounding kgen does not copy), `rounding_mode` only None (floor and trunc division are other
# ops). Any other value, or any other keyword, leaves the op to PyTorch.
_PLAIN_BINARY_KEYWORDS = {"other": None, "alpha": 1, "rounding_mode": None}


def _binary(name, reversed_operands=False):
    def make(args, kwargs):
        other = kwargs.get("other", args[1] if len(args) > 1 else None)
        for key, value in kwargs.items():
            if key not in _PLAIN_BINARY_KEYWORDS or (key != "other" and value != _PLAIN_BINARY_KEYWORDS[key]):
                return None
        # torch.rsub(a, b) is b - a
        return ElementwiseCall(name, [other, args[0]] if reversed_operands else [args[0], other], {})
    return make


def _rbinary(name):
    return lambda args, kwargs: ElementwiseCall(name, [args[0], args[1]], {})


def _min_max(name):
    def make(args, kwargs):
        # torch.min(a, b) / torch.max(a, b) with two tensors (or a tensor constant) is element-wise;
        # with a dim it is a reduction (see reductions in plan.py).
        if len(args) == 2 and not isinstance(args[1], int) and "dim" not in kwargs:
            return ElementwiseCall(name, [args[0], args[1]], {})
        return None
    return make


FUNCTIONS = {
    torch.relu: _unary("relu"), F.relu: _unary("relu"),
    torch.sigmoid: _unary("sigmoid"), F.sigmoid: _unary("sigmoid"),
    torch.tanh: _unary("tanh"), F.tanh: _unary("tanh"),
    F.gelu: _gelu, F.silu: _unary("silu"), F.hardswish: _unary("hardswish"), F.hardsigmoid: _unary("hardsigmoid"),
    F.hardtanh: _hardtanh, F.relu6: lambda a, k: ElementwiseCall("hardtanh", [a[0]], {"lo": 0.0, "hi": 6.0}),
    F.leaky_relu: _leaky, F.mish: _unary("mish"), F.softplus: _softplus,
    torch.clamp: _clamp, torch.clip: _clamp,
    torch.clamp_min: _clamp_min, torch.clamp_max: _clamp_max,
    torch.exp: _unary("exp"), torch.exp2: _unary("exp2"), torch.special.exp2: _unary("exp2"),
    torch.log: _unary("log"), torch.abs: _unary("abs"), torch.sqrt: _unary("sqrt"),
    torch.square: _unary("square"), torch.neg: _unary("neg"),
    torch.add: _binary("add"), torch.sub: _binary("sub"), torch.mul: _binary("mul"), torch.div: _binary("div"),
    # PyTorch's aliases of the same kernels
    torch.subtract: _binary("sub"), torch.multiply: _binary("mul"), torch.divide: _binary("div"),
    torch.true_divide: _binary("div"), torch.rsub: _binary("sub", reversed_operands=True),
    torch.negative: _unary("neg"), torch.absolute: _unary("abs"), torch.masked_fill: _masked_fill,
    torch.minimum: _rbinary("minimum"), torch.maximum: _rbinary("maximum"),
    torch.min: _min_max("minimum"), torch.max: _min_max("maximum"),
    operator.add: _rbinary("add"), operator.sub: _rbinary("sub"), operator.mul: _rbinary("mul"),
    operator.truediv: _rbinary("div"), operator.neg: _unary("neg"),
    F.elu: _alpha("elu"), F.celu: _alpha("celu"), F.selu: _unary("selu"), torch.selu: _unary("selu"),
    F.softsign: _unary("softsign"), F.logsigmoid: _unary("logsigmoid"), F.tanhshrink: _unary("tanhshrink"),
    F.threshold: _threshold, torch.pow: _pow, operator.pow: _pow, torch.rsqrt: _unary("rsqrt"),
    torch.reciprocal: _unary("reciprocal"), torch.where: _where,
    torch.erf: _unary("erf"), torch.special.erf: _unary("erf"), torch.erfc: _unary("erfc"),
    torch.special.erfc: _unary("erfc"), torch.expm1: _unary("expm1"), torch.special.expm1: _unary("expm1"),
    torch.log1p: _unary("log1p"), torch.special.log1p: _unary("log1p"), torch.sin: _unary("sin"),
    torch.cos: _unary("cos"),
    torch.special.expit: _unary("sigmoid"), torch.prelu: _prelu, torch.lerp: _lerp,
    torch.addcdiv: _addc("addcdiv"), torch.addcmul: _addc("addcmul"), torch.tan: _unary("tan"),
    torch.atan: _unary("atan"), torch.arctan: _unary("atan"), torch.sinh: _unary("sinh"), torch.cosh: _unary("cosh"),
    torch.log2: _unary("log2"), torch.log10: _unary("log10"),
    F.softshrink: _shrink("softshrink"), F.hardshrink: _shrink("hardshrink"),  # F.hardshrink is torch.hardshrink
}

METHODS = {
    "relu": _unary("relu"), "sigmoid": _unary("sigmoid"), "tanh": _unary("tanh"), "exp": _unary("exp"),
    "exp2": _unary("exp2"), "log": _unary("log"), "abs": _unary("abs"), "sqrt": _unary("sqrt"),
    "square": _unary("square"),
    "neg": _unary("neg"), "clamp": _clamp, "clip": _clamp,
    "clamp_min": _clamp_min, "clamp_max": _clamp_max,
    "add": _binary("add"), "sub": _binary("sub"), "mul": _binary("mul"), "div": _binary("div"),
    "subtract": _binary("sub"), "multiply": _binary("mul"), "divide": _binary("div"), "true_divide": _binary("div"),
    "negative": _unary("neg"), "absolute": _unary("abs"), "masked_fill": _masked_fill,
    "minimum": _rbinary("minimum"), "maximum": _rbinary("maximum"),
    "pow": _pow, "rsqrt": _unary("rsqrt"), "reciprocal": _unary("reciprocal"),
    "erf": _unary("erf"), "erfc": _unary("erfc"), "expm1": _unary("expm1"), "log1p": _unary("log1p"),
    "sin": _unary("sin"), "cos": _unary("cos"), "hardshrink": _shrink("hardshrink"), "prelu": _prelu,
    "addcdiv": _addc("addcdiv"), "addcmul": _addc("addcmul"), "lerp": _lerp, "tan": _unary("tan"),
    "atan": _unary("atan"), "arctan": _unary("atan"), "sinh": _unary("sinh"), "cosh": _unary("cosh"),
    "log2": _unary("log2"), "log10": _unary("log10"),
}


def _module_op(module: nn.Module):
    if isinstance(module, nn.ReLU):
        return "relu", {}
    if isinstance(module, nn.ReLU6):
        return "hardtanh", {"lo": 0.0, "hi": 6.0}
    if isinstance(module, nn.Hardtanh):
        return "hardtanh", {"lo": module.min_val, "hi": module.max_val}
    if isinstance(module, nn.LeakyReLU):
        return "leaky_relu", {"slope": module.negative_slope}
    if isinstance(module, nn.Sigmoid):
        return "sigmoid", {}
    if isinstance(module, nn.Tanh):
        return "tanh", {}
    if isinstance(module, nn.GELU):
        return ("gelu_tanh" if module.approximate == "tanh" else "gelu_erf"), {}
    if isinstance(module, nn.SiLU):
        return "silu", {}
    if isinstance(module, nn.Hardswish):
        return "hardswish", {}
    if isinstance(module, nn.Hardsigmoid):
        return "hardsigmoid", {}
    if isinstance(module, nn.Mish):
        return "mish", {}
    if isinstance(module, nn.Softplus):
        return "softplus", {"beta": module.beta, "threshold": module.threshold}
    if isinstance(module, nn.ELU):
        return "elu", {"alpha": module.alpha}
    if isinstance(module, nn.CELU):
        return "celu", {"alpha": module.alpha}
    if isinstance(module, nn.SELU):
        return "selu", {}
    if isinstance(module, nn.Softsign):
        return "softsign", {}
    if isinstance(module, nn.LogSigmoid):
        return "logsigmoid", {}
    if isinstance(module, nn.Tanhshrink):
        return "tanhshrink", {}
    if isinstance(module, nn.Softshrink):
        return "softshrink", {"lambd": module.lambd}
    if isinstance(module, nn.Hardshrink):
        return "hardshrink", {"lambd": module.lambd}
    if isinstance(module, nn.Threshold):
        return "threshold", {"threshold": module.threshold, "value": module.value}
    return None


# Module attributes behind each constant of a module op: checked again by ModelNew at construction.
MODULE_CONSTANT_ATTRS = {"slope": "negative_slope", "lo": "min_val", "hi": "max_val", "beta": "beta",
                         "threshold": "threshold", "alpha": "alpha", "value": "value", "lambd": "lambd"}


def recognise(node, module: nn.Module | None = None) -> ElementwiseCall | None:
    """The ElementwiseCall an element-wise node makes (operands: fx nodes or Python scalars; constants: floats, a
    module's as the module holds them), else None."""
    if node.op == "call_module" and module is not None:
        found = _module_op(module)
        if found is None or len(node.args) != 1 or node.kwargs:
            return None
        op, consts = found
        return ElementwiseCall(op, [node.args[0]], dict(consts))
    if node.op == "call_function" and node.target in FUNCTIONS:
        made = FUNCTIONS[node.target](list(node.args), dict(node.kwargs))
    elif node.op == "call_method" and node.target in METHODS:
        made = METHODS[node.target](list(node.args), dict(node.kwargs))
    else:
        return None
    if made is None:
        return None
    if "inplace" in node.kwargs and node.kwargs["inplace"]:
        return None
    consts = {}
    for key, value in made.consts.items():
        if _scalar(value) is None:
            return None  # a tensor-valued clamp bound, say: not a constant
        consts[key] = float(value)
    return replace(made, consts=consts)
