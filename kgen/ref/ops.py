"""The op table: every element-wise op kgen fuses, with its CUDA value and the local derivative of each
operand, in PyTorch's own formulas (so a fused region computes what the reference computes, and its
backward what autograd computes: ties, thresholds and clamps included).

Expressions are C++ format templates over `{a}`, `{b}`, `{c}`, `{d}` (operands), `{r}` (the op's result) and named
scalar constants (`{slope}`, `{lo}`...), which codegen fills in (functors.py: the operands' C++ expressions, the
constants as float literals); the quoted PyTorch formula (`torch`) names the operands a, b, c, d as they are.
Device helpers (`kgen::sigmoidf`...) live in kgen/templates/cuda/core/ops.cuh. Which PyTorch call is which op of
this table: op_calls.py.
"""
from __future__ import annotations

import math
from dataclasses import dataclass


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
