"""The op table: every element-wise op kgen fuses, with its CUDA value and the local derivative of each
operand, in PyTorch's own formulas (so a fused region computes what the reference computes, and its
backward what autograd computes: ties, thresholds and clamps included).

Expressions are C++ format templates over `{a}`, `{b}`, `{c}`, `{d}` (operands), `{r}` (the op's result) and named
scalar constants (`{slope}`, `{lo}`...), which codegen fills in (functors.py: the operands' C++ expressions, the
constants as float literals); the quoted PyTorch formula (`torch`) names the operands a, b, c, d as they are.
Device helpers (`kgen::sigmoidf`...) live in kgen/templates/cuda/core/ops.cuh.

`recognise(node, module)` maps one torch.fx node to an ElementwiseCall (op name, operands, constants) or None.
"""
from __future__ import annotations

import math
import operator
from dataclasses import dataclass, replace

import torch
import torch.fx
import torch.nn as nn
import torch.nn.functional as F


@dataclass(frozen=True)
class OpDef:
    """One fusable op: its value and the local derivative of each operand as C++ templates (module docstring), and
    the PyTorch formula they follow."""
    name: str
    arity: int
    value: str
    grads: tuple           # local derivative per operand
    torch: str             # the PyTorch formula it follows, quoted in the generated comment
    # The value as the GroupNorm moments in kgen's conv epilogue take it (conv/convt_wgmma.cuh), where a cheaper form
    # than `value` is close enough to steer the normalisation ("": `value` itself).
    moments: str = ""
    # The value as a backward recomputes it for the derivatives, where a cheaper form within a few ulp of `value`
    # serves ("": `value` itself): a faithful region's forward value is PyTorch's to the bit (core/ops.cuh), a
    # backward's need not be, nor the forward's of a region that is not faithful (functors.epilogue_functor).
    recompute: str = ""


# Ops CUDA autocast runs in float32 whatever their input (its float32 list: exp, log, pow, softplus... and a scalar
# divided by a tensor, __rtruediv__): under autocast a step that applies one gives a float32 output.
AUTOCAST_FLOAT32 = frozenset({"exp", "expm1", "log", "log1p", "log2", "log10", "pow", "reciprocal", "rsqrt", "softplus",
                              "tan", "sinh", "cosh"})


def autocast_float32(nodes) -> bool:
    """Whether CUDA autocast runs one of these element-wise nodes in float32 (AUTOCAST_FLOAT32)."""
    return any(n.op in AUTOCAST_FLOAT32 or (n.op == "div" and n.operands and n.operands[0].is_scalar) for n in nodes)


OPS = {o.name: o for o in [
    # add/sub/mul/div as separately rounded float ops (never contracted into an FMA with a neighbour):
    # PyTorch runs each in its own kernel, so this is the reference's rounding.
    OpDef("add", 2, "__fadd_rn({a}, {b})", ("1.f", "1.f"), "a + b"),
    OpDef("sub", 2, "__fsub_rn({a}, {b})", ("1.f", "-1.f"), "a - b"),
    OpDef("mul", 2, "__fmul_rn({a}, {b})", ("{b}", "{a}"), "a * b"),
    OpDef("div", 2, "__fdiv_rn({a}, {b})", ("1.f / {b}", "-{a} / ({b} * {b})"), "a / b"),
    OpDef("neg", 1, "-{a}", ("-1.f",), "-a"),
    # relu's gradient as PyTorch's threshold_backward(grad, result, 0): zero where the result is <= 0, so it passes
    # where the result is NaN (reluf passes a NaN on, as torch.relu does)
    OpDef("relu", 1, "kgen::reluf({a})", ("{a} <= 0.f ? 0.f : 1.f",), "relu(a)"),
    OpDef("leaky_relu", 1, "{a} > 0.f ? {a} : {a} * {slope}", ("{a} > 0.f ? 1.f : {slope}",),
          "leaky_relu(a, {slope})"),
    OpDef("sigmoid", 1, "kgen::sigmoidf({a})", ("(1.f - {r}) * {r}",), "sigmoid(a)",
          recompute="kgen::sigmoid_fast({a})"),
    OpDef("tanh", 1, "tanhf({a})", ("1.f - {r} * {r}",), "tanh(a)"),
    OpDef("gelu_erf", 1, "kgen::gelu_erf({a})", ("kgen::gelu_erf_grad({a})",), "gelu(a)",
          moments="kgen::convt::gelu_erf_moments({a})"),
    OpDef("gelu_tanh", 1, "kgen::gelu_tanh({a})", ("kgen::gelu_tanh_grad({a})",), "gelu(a, approximate='tanh')"),
    OpDef("silu", 1, "kgen::siluf({a})", ("kgen::silu_grad({a})",), "silu(a)", recompute="kgen::silu_fast({a})"),
    OpDef("hardswish", 1, "kgen::hardswishf({a})", ("kgen::hardswish_grad({a})",), "hardswish(a)"),
    OpDef("hardsigmoid", 1, "kgen::hardsigmoidf({a})", ("({a} > -3.f && {a} < 3.f) ? (1.f / 6.f) : 0.f",),
          "hardsigmoid(a)"),
    OpDef("hardtanh", 1, "kgen::clampf({a}, {lo}, {hi})", ("({a} <= {lo} || {a} >= {hi}) ? 0.f : 1.f",),
          "hardtanh(a, {lo}, {hi})"),
    OpDef("clamp", 1, "kgen::clampf({a}, {lo}, {hi})", ("kgen::clamp_grad({a}, {lo}, {hi})",),
          "clamp(a, {lo}, {hi})"),
    OpDef("minimum", 2, "kgen::minimumf({a}, {b})",
          ("{a} < {b} ? 1.f : ({a} == {b} ? 0.5f : 0.f)", "{b} < {a} ? 1.f : ({a} == {b} ? 0.5f : 0.f)"),
          "minimum(a, b)"),
    OpDef("maximum", 2, "kgen::maximumf({a}, {b})",
          ("{a} > {b} ? 1.f : ({a} == {b} ? 0.5f : 0.f)", "{b} > {a} ? 1.f : ({a} == {b} ? 0.5f : 0.f)"),
          "maximum(a, b)"),
    OpDef("mish", 1, "kgen::mishf({a})", ("kgen::mish_grad({a})",), "mish(a)", recompute="kgen::mish_fast({a})"),
    OpDef("softplus", 1, "kgen::softplusf({a}, {beta}, {threshold})",
          ("kgen::softplus_grad({a}, {beta}, {threshold})",), "softplus(a, {beta}, {threshold})"),
    OpDef("exp", 1, "expf({a})", ("{r}",), "exp(a)"),
    # exp2 as PyTorch's CUDA kernel computes it (exp2f); autograd's derivative is result * ln 2
    OpDef("exp2", 1, "exp2f({a})", ("0.6931471805599453f * {r}",), "exp2(a)"),
    OpDef("log", 1, "logf({a})", ("1.f / {a}",), "log(a)"),
    OpDef("abs", 1, "fabsf({a})", ("{a} > 0.f ? 1.f : ({a} < 0.f ? -1.f : 0.f)",), "abs(a)"),
    OpDef("sqrt", 1, "sqrtf({a})", ("0.5f / {r}",), "sqrt(a)"),
    OpDef("square", 1, "{a} * {a}", ("2.f * {a}",), "a * a"),
    OpDef("elu", 1, "kgen::eluf({a}, {alpha}, 1.f, 1.f)", ("kgen::elu_grad({a}, {alpha}, 1.f, 1.f)",),
          "elu(a, {alpha})"),
    OpDef("selu", 1, "kgen::eluf({a}, 1.6732632423543772f, 1.0507009873554805f, 1.f)",
          ("kgen::elu_grad({a}, 1.6732632423543772f, 1.0507009873554805f, 1.f)",), "selu(a)"),
    OpDef("celu", 1, "kgen::eluf({a}, {alpha}, 1.f, 1.f / {alpha})",
          ("kgen::elu_grad({a}, {alpha}, 1.f, 1.f / {alpha})",),
          "celu(a, {alpha})"),
    OpDef("softsign", 1, "__fdiv_rn({a}, __fadd_rn(fabsf({a}), 1.f))",
          ("1.f / ((fabsf({a}) + 1.f) * (fabsf({a}) + 1.f))",), "a / (abs(a) + 1)"),
    OpDef("logsigmoid", 1, "kgen::logsigmoidf({a})", ("kgen::logsigmoid_grad({a})",), "logsigmoid(a)"),
    OpDef("tanhshrink", 1, "__fsub_rn({a}, tanhf({a}))", ("tanhf({a}) * tanhf({a})",), "a - tanh(a)"),
    OpDef("threshold", 1, "{a} <= {threshold} ? {value} : {a}", ("{a} <= {threshold} ? 0.f : 1.f",),
          "threshold(a, {threshold}, {value})"),
    OpDef("pow", 1, "kgen::pow_scalar({a}, {p})", ("kgen::pow_grad({a}, {p})",), "a ** {p}"),
    OpDef("rsqrt", 1, "rsqrtf({a})", ("-0.5f * {r} * {r} * {r}",), "rsqrt(a)"),
    OpDef("reciprocal", 1, "__fdiv_rn(1.f, {a})", ("-({r} * {r})",), "reciprocal(a)"),
    # GELU written out (0.5 * x * (1 + erf(x / sqrt(2)))) and other special functions: PyTorch's CUDA kernels
    # call the same libdevice functions; the derivatives are autograd's formulas.
    OpDef("erf", 1, "erff({a})", ("1.1283791670955126f * expf(-({a} * {a}))",), "erf(a)"),
    OpDef("erfc", 1, "erfcf({a})", ("-1.1283791670955126f * expf(-({a} * {a}))",), "erfc(a)"),
    OpDef("expm1", 1, "expm1f({a})", ("{r} + 1.f",), "expm1(a)"),
    OpDef("log1p", 1, "log1pf({a})", ("1.f / ({a} + 1.f)",), "log1p(a)"),
    OpDef("sin", 1, "sinf({a})", ("cosf({a})",), "sin(a)"),
    # PReLU: b is its weight, per channel or one value (a get_attr the planner reads as a parameter); the
    # product rounded once as PyTorch's prelu kernel rounds it; autograd's gradient to the weight is a where a <= 0.
    OpDef("prelu", 2, "({a} > 0.f ? {a} : __fmul_rn({b}, {a}))",
          ("{a} > 0.f ? 1.f : {b}", "{a} > 0.f ? 0.f : {a}"),
          "prelu(a, b)"),
    # The shrinks as PyTorch's CUDA kernels: inside [-lambd, lambd] softshrink gives a * 0 (a NaN stays NaN, a
    # negative a gives -0); both gradients pass outside the closed interval (shrink_backward).
    OpDef("softshrink", 1,
          "({a} > {lambd} ? __fsub_rn({a}, {lambd}) : ({a} < -{lambd} ? __fadd_rn({a}, {lambd}) : {a} * 0.f))",
          ("({a} >= -{lambd} && {a} <= {lambd}) ? 0.f : 1.f",), "softshrink(a, {lambd})"),
    OpDef("hardshrink", 1, "(({a} >= -{lambd} && {a} <= {lambd}) ? 0.f : {a})",
          ("({a} >= -{lambd} && {a} <= {lambd}) ? 0.f : 1.f",), "hardshrink(a, {lambd})"),
    OpDef("cos", 1, "cosf({a})", ("-sinf({a})",), "cos(a)"),
    OpDef("tan", 1, "tanf({a})", ("1.f + {r} * {r}",), "tan(a)"),
    OpDef("atan", 1, "atanf({a})", ("1.f / ({a} * {a} + 1.f)",), "atan(a)"),
    OpDef("sinh", 1, "sinhf({a})", ("coshf({a})",), "sinh(a)"),
    OpDef("cosh", 1, "coshf({a})", ("sinhf({a})",), "cosh(a)"),
    OpDef("log2", 1, "log2f({a})", ("1.f / ({a} * 0.6931471805599453f)",), "log2(a)"),
    OpDef("log10", 1, "log10f({a})", ("1.f / ({a} * 2.302585092994046f)",), "log10(a)"),
    # addcmul, addcdiv and lerp as PyTorch's CUDA kernels compute them, each in one or two fmas: addcmul and addcdiv
    # `fma(value, b * c, a)` and `fma(value, b / c, a)`, at value 1 `fma(b, c, a)` and `a + b / c` (ATen's
    # pointwise_op_impl); lerp `|w| < 0.5 ? a + w * (b - a) : b - (b - a) * (1 - w)` (ATen's lerp, contracted by
    # nvcc); autograd's derivatives (lerp's weight a constant or a tensor). value and a constant weight fold.
    OpDef("addcmul", 3, "({value} == 1.f ? fmaf({b}, {c}, {a}) : fmaf({value}, __fmul_rn({b}, {c}), {a}))",
          ("1.f", "{c} * {value}", "{b} * {value}"), "a + {value} * (b * c)"),
    OpDef("addcdiv", 3, "fmaf({value}, __fdiv_rn({b}, {c}), {a})",
          ("1.f", "{value} / {c}", "-({value}) * {b} / ({c} * {c})"), "a + {value} * (b / c)"),
    OpDef("lerp", 3, "(fabsf({c}) < 0.5f ? fmaf({c}, __fsub_rn({b}, {a}), {a}) "
                     ": fmaf(-__fsub_rn({b}, {a}), __fsub_rn(1.f, {c}), {b}))",
          ("1.f - {c}", "{c}", "{b} - {a}"), "lerp(a, b, c)"),
]}

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


# torch.where(a CMP b, c, d) with the comparison folded in (the comparison read by nothing else): one op of
# four operands, `a CMP b ? c : d`; the gradient goes to c where the condition holds, to d elsewhere, and to
# neither side of the comparison (as autograd: a comparison has no gradient).
COMPARISON_SYMBOLS = {"gt": ">", "lt": "<", "ge": ">=", "le": "<=", "eq": "==", "ne": "!="}


def where_op(cmp: str) -> str:
    """The name in OPS of the where that folds in the comparison `cmp` (gt, lt, ge, le, eq, ne)."""
    return f"where_{cmp}"


for _cmp, _sym in COMPARISON_SYMBOLS.items():
    OPS[where_op(_cmp)] = OpDef(where_op(_cmp), 4, f"({{a}} {_sym} {{b}} ? {{c}} : {{d}})",
                                ("0.f", "0.f", f"({{a}} {_sym} {{b}} ? 1.f : 0.f)",
                                 f"({{a}} {_sym} {{b}} ? 0.f : 1.f)"),
                                f"where(a {_sym} b, c, d)")
# The where ops: they compute a comparison node inside themselves (PwNode.folded).
WHERE_OPS = frozenset(where_op(cmp) for cmp in COMPARISON_SYMBOLS)

# Ops whose local derivative can be infinite at a finite operand (1 / b at b = 0, exp's overflow, log and the
# roots at 0): behind them autograd's 0 * inf is NaN, so a zero upstream gradient does not give exact zeros.
UNBOUNDED_GRAD_OPS = frozenset({"div", "log", "sqrt", "rsqrt", "reciprocal", "pow", "log1p", "exp", "exp2",
                                "expm1", "addcdiv", "tan", "sinh", "cosh", "log2", "log10"})

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


def cuda_float(value: float) -> str:
    """A float literal that round-trips exactly (or the infinity/NaN spelling)."""
    if math.isinf(value):
        return "INFINITY" if value > 0 else "(-INFINITY)"
    if math.isnan(value):
        return "NAN"
    text = repr(float(value))
    if "e" in text or "E" in text:
        mantissa, exponent = text.lower().split("e")
        if "." not in mantissa:
            mantissa += ".0"
        return f"{mantissa}e{exponent}f"
    return text + "f"
