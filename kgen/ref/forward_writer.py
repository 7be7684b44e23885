"""ModelNew.forward's statements from a Plan (part of the third room of `kgen emit --ref`): one statement a step in
the reference's order (a library step: the PyTorch call the reference makes, its bias dropped where a region adds it;
a kgen step: its C++ autograd node, a region's or an element-wise step's, or with --autograd python its Function),
then only the statements the return needs (live_statements), and forward's own arguments as the reference declares
them.
"""
from __future__ import annotations

import inspect
import math
import operator
from dataclasses import dataclass

import torch
import torch.fx
import torch.nn as nn

from kgen.ref.carried import own_function
from kgen.ref.concrete import GUARD
from kgen.ref.graph import library_class, self_attr
from kgen.ref.ir import BatchNormStep, LibraryStep, Plan, PointwiseStep, RegionStep
from kgen.ref.rewrite import assigned

CONV_FUNCTIONAL = {nn.Conv1d: "conv1d", nn.Conv2d: "conv2d", nn.Conv3d: "conv3d"}
CONVT_FUNCTIONAL = {nn.ConvTranspose1d: "conv_transpose1d", nn.ConvTranspose2d: "conv_transpose2d",
                    nn.ConvTranspose3d: "conv_transpose3d"}
INFIX = {operator.add: "+", operator.sub: "-", operator.mul: "*", operator.truediv: "/", operator.floordiv: "//",
         operator.mod: "%", operator.pow: "**", operator.matmul: "@",
         operator.gt: ">",
         operator.lt: "<", operator.ge: ">=", operator.le: "<=", operator.eq: "==", operator.ne: "!=",
         operator.and_: "&", operator.or_: "|", operator.xor: "^", operator.lshift: "<<", operator.rshift: ">>",
         operator.is_: "is"}
PREFIX = {operator.neg: "-", operator.pos: "+", operator.invert: "~", operator.not_: "not "}


def var(name: str) -> str:
    return name


def literal(value) -> str:
    """Python source for a constant of the graph: repr, except for the floats repr writes as bare names."""
    if isinstance(value, float) and not math.isfinite(value):
        return f"float({repr(value)!r})"
    if isinstance(value, list):
        return "[" + ", ".join(literal(v) for v in value) + "]"
    return repr(value)


class ForwardWriter:
    """ModelNew.forward, one statement per step, in the reference's order. Each statement is written as a
    Statement that knows the variables it reads (every node's variable goes through `read`), so the steps whose
    values nothing reads are left out before any text is joined (live_statements)."""

    def __init__(self, plan: Plan, autograd: str):
        self.plan = plan
        self.autograd = autograd      # "cpp": each region and element-wise step one C++ node (ref/autograd.cpp.j2)
        self.modules = dict(plan.ref.gm.named_modules())
        self.alias: dict[str, str] = {}   # region-internal value -> the variable that stands for it (x.device)
        self.reads: set[str] = set()      # the variables the statement being written reads (statement)

    def value(self, arg) -> str:
        """Python source for an argument of a node: a node's variable (read), a constant, or a container or slice of
        them."""
        if isinstance(arg, torch.fx.Node):
            return self.read(self.alias.get(arg.name, var(arg.name)))
        if isinstance(arg, slice):   # written as repr writes it, a node bound by its own name
            bounds = (arg.start, arg.stop, arg.step)
            return "slice(" + ", ".join(self.read(var(b.name)) if isinstance(b, torch.fx.Node) else repr(b)
                                        for b in bounds) + ")"
        if isinstance(arg, (list, tuple)):
            inner = ", ".join(self.value(a) for a in arg)
            return f"[{inner}]" if isinstance(arg, list) else f"({inner}{',' if len(arg) == 1 else ''})"
        if isinstance(arg, dict):
            return "{" + ", ".join(f"{k!r}: {self.value(v)}" for k, v in arg.items()) + "}"
        if isinstance(arg, torch.dtype):
            return str(arg)
        if isinstance(arg, torch.device):
            return f"torch.device({str(arg)!r})"
        return literal(arg)

    def attr(self, target: str) -> str:
        return self_attr(target, self.plan.ref.model)

    def value_of(self, name: str) -> str:
        return self.read(self.alias.get(name, var(name)))

    def call_args(self, node) -> str:
        parts = [self.value(a) for a in node.args] + [f"{k}={self.value(v)}" for k, v in node.kwargs.items()]
        return ", ".join(parts)

    def library(self, step: LibraryStep) -> str:
        node = step.node
        if node.op == "get_attr":
            return f"{var(node.name)} = {self.attr(node.target)}"
        if node.op == "call_module":
            module = self.modules[node.target]
            if step.drop_bias:
                return f"{var(node.name)} = {self._without_bias(node, module, step.channels_last)}"
            if step.channels_last:
                rest = "".join([f", {self.value(a)}" for a in node.args[1:]] +
                               [f", {k}={self.value(v)}" for k, v in node.kwargs.items()])
                return f"{var(node.name)} = {self.attr(node.target)}(_call(_ChannelsLastCopy, {self.value(node.args[0])}){rest})"
            if getattr(module, "inplace", False) is True and node.args:
                # The module writes its input in place: it gets a copy, so that what kgen's steps saved for the
                # backward stays intact, with the reference's own (in-place) kernel and random draws.
                rest = "".join(f", {self.value(a)}" for a in node.args[1:])
                return (f"{var(node.name)} = {self.attr(node.target)}({self.value(node.args[0])}.clone(){rest})"
                        "  # in place in the reference: a copy keeps the saved tensors intact")
            return f"{var(node.name)} = {self.attr(node.target)}({self.call_args(node)})"
        if node.op == "call_method":
            rest = [self.value(a) for a in node.args[1:]] + [f"{k}={self.value(v)}" for k, v in node.kwargs.items()]
            return f"{var(node.name)} = {self.value(node.args[0])}.{node.target}({', '.join(rest)})"
        if node.target is operator.getitem:
            return f"{var(node.name)} = {self.value(node.args[0])}[{self.value(node.args[1])}]"
        if node.target in PREFIX:
            return f"{var(node.name)} = {PREFIX[node.target]}{self.value(node.args[0])}"
        if node.target in INFIX:
            return f"{var(node.name)} = {self.value(node.args[0])} {INFIX[node.target]} {self.value(node.args[1])}"
        if node.target is getattr:
            return f"{var(node.name)} = {self.value(node.args[0])}.{node.args[1]}"
        if node.target is assigned:   # `y[index] = value` out of place (rewrite.assigned; the file's _assigned)
            return f"{var(node.name)} = _assigned({self.call_args(node)})"
        if own_function(node.target):   # the reference's own function, carried in the prelude
            return f"{var(node.name)} = {node.target.__name__}({self.call_args(node)})"
        name = torch.fx.node._get_qualified_name(node.target)
        name = name.replace("torch.nn.functional.", "F.").removeprefix("builtins.")
        return f"{var(node.name)} = {name}({self.call_args(node)})"

    def _without_bias(self, node, module, channels_last: bool = False) -> str:
        """The conv / linear call whose bias a kgen step adds. In float16 / bfloat16 the call keeps a bias the
        reference's library op rounds with its result (_library_bias, half_kept_biases; the step adds zeros)."""
        x = self.value(node.args[0])
        m = self.attr(node.target)
        bias = f"_library_bias({m}.bias, {x})" if f"{m}.bias" in self.half_kept_biases() else "None"
        if channels_last:
            x = f"_call(_ChannelsLastCopy, {x})"
        if isinstance(module, nn.Linear):
            return f"F.linear({x}, {m}.weight, {bias})"
        if library_class(module, CONV_FUNCTIONAL) is not None:
            return f"{m}._conv_forward({x}, {m}.weight, {bias})"
        fn = CONVT_FUNCTIONAL[library_class(module, CONVT_FUNCTIONAL)]
        return (f"F.{fn}({x}, {m}.weight, {bias}, {m}.stride, {m}.padding, {m}.output_padding, {m}.groups, "
                f"{m}.dilation)")

    def peeled_biases(self) -> set:
        """The expressions of the conv / linear biases a kgen step adds in the library op's place."""
        return {f"{self.attr(s.node.target)}.bias" for s in self.plan.steps
                if isinstance(s, LibraryStep) and s.drop_bias and s.node.op == "call_module"}

    def half_kept_biases(self) -> set:
        """The peeled biases the library call keeps in float16 / bfloat16, so that the step reads the reference's
        rounded values: a linear's (cuBLAS adds it in the GEMM: the biased result is rounded once). A conv's bias is
        the step's in every dtype: cuDNN convolves without it and PyTorch adds it after (the conv's result rounded,
        then the sum), as a region's prologue does at the reference's rounding points (value_stored) and a batch
        norm's kernels do in half precision (BnShift). (Before a faithful region the Linear keeps its bias in every
        dtype: the plan leaves it there, plan_faithful._keep_linear_bias.)"""
        return set(self._peeled_linear_biases().values())

    def _peeled_linear_biases(self) -> dict:
        """Output node name -> bias expression of each nn.Linear whose bias a kgen step adds."""
        return {s.node.name: f"{self.attr(s.node.target)}.bias" for s in self.plan.steps
                if isinstance(s, LibraryStep) and s.drop_bias and s.node.op == "call_module"
                and isinstance(self.modules[s.node.target], nn.Linear)}

    def lines(self) -> list[str]:
        """forward's statements after the renamed arguments: one per step the return needs, then the return."""
        for step in self.plan.steps:
            if isinstance(step, RegionStep):
                self.region_aliases(step)
        statements = [self.step_statement(step) for step in self.plan.steps]
        statements.append(self.statement(None, lambda: f"return {self.value(self.plan.outputs)}"))
        return [s.text for s in live_statements(statements)]

    def statement(self, defines: str | None, write) -> Statement:
        """The Statement `write()` writes: its text, and the variables it read through `read`."""
        self.reads = set()
        text = write()
        return Statement(defines, frozenset(self.reads), text)

    def read(self, name: str) -> str:
        """A variable the statement being written reads: noted among its reads, returned as it is written."""
        self.reads.add(name)
        return name

    def step_statement(self, step) -> Statement:
        if isinstance(step, LibraryStep) and step.node.meta.get(GUARD):
            # a shape guard (concrete.py): no value, always run
            return self.statement(None, lambda: f"torch._assert({self.call_args(step.node)})")
        if isinstance(step, LibraryStep):
            return self.statement(var(step.node.name), lambda: self.library(step))
        if isinstance(step, RegionStep):
            return self.statement(var(step.output), lambda: self.region(step))
        if isinstance(step, BatchNormStep):
            return self.statement(var(step.output), lambda: self.batch_norm(step))
        return self.statement(var(step.output), lambda: self.pointwise(step))

    def region_aliases(self, step: RegionStep) -> None:
        """Only x.device / x.shape / x.dtype read a region's inner values outside it (also before it runs: a tensor it
        reads per sample viewed by `h.size(1)`); x stands for them, or with --conv fused the conv's input (the conv's
        output is never computed in Python)."""
        stand_in = var(step.conv_input if step.conv_fused else step.input)
        for name in [p.name for p in step.prologue] + [e.name for e in step.epilogue] + [step.gn]:
            if name != step.output:
                self.alias[name] = stand_in

    def region(self, step: RegionStep) -> str:
        kept = self.half_kept_biases()
        x = self.read(var(step.input)) if not step.conv_fused else ""
        params = ", ".join(self.value_param(p, step) if p.value else
                           f"_peeled_bias({p.expr}, {x})" if p.expr in kept and not step.conv_fused else p.expr
                           for p in step.params)
        gn = dict(step.gn_args)
        if "groups_node" in gn:   # a group count forward computes (x.shape[1] // 4): that variable, read
            gn["groups"] = self.read(var(gn["groups_node"]))
        if step.conv_fused:
            # kgen's wgmma conv and the region (--conv fused), from the conv's input; the conv's own statement is
            # left unread, so it is not written.
            return (f"{var(step.output)} = _region{step.index}_convt({self.attr(step.conv_fused)}, "
                    f"{self.value_of(step.conv_input)}, {gn['weight']}, {gn['bias']}, {gn['groups']}, {gn['eps']}, "
                    f"torch.is_grad_enabled(){', ' if params else ''}{params})")
        window = step.window_expr or "()"
        if self.autograd == "cpp":
            faithful = faithful_switch(step)
            return (f"{var(step.output)} = _ext.region{step.index}({x}, {gn['weight']}, {gn['bias']}, {gn['groups']}, "
                    f"{gn['eps']}, {window}, {faithful + ', ' if faithful else ''}[{params}])")
        return (f"{var(step.output)} = _call(_Region{step.index}, {x}, {gn['weight']}, "
                f"{gn['bias']}, {gn['groups']}, {gn['eps']}, {window}, torch.is_grad_enabled()"
                f"{', ' if params else ''}{params})")

    def value_param(self, param, step: RegionStep) -> str:
        """A tensor another step computes, as the region's entry points take it: contiguous (a column of a parameter
        matrix is a strided view; a merged region's entry points copy theirs, groupnorm/merged.cuh)."""
        value = self.value_of(param.value)
        return value if step.merged or not param.along_channels else f"{value}.contiguous()"

    def batch_norm(self, step: BatchNormStep) -> str:
        for name in [step.bn] + [n.name for n in step.nodes]:
            if name != step.output:
                self.alias[name] = var(step.input)  # only x.device / x.dtype read these outside
        m = self.attr(step.bn_module)
        tail = "".join(f", {p.expr}" for p in step.params)
        x = self.read(var(step.input))
        conv_bias = step.conv_bias or "None"
        if step.conv_bias in self.half_kept_biases():
            conv_bias = f"_peeled_bias({step.conv_bias}, {x})"
        return (f"{var(step.output)} = _call(_BatchNorm{step.index}, {x}, {m}.weight, "
                f"{m}.bias, *_batch_norm_mode({m}), {conv_bias}, {m}.eps, "
                f"{step.window_expr or '()'}, torch.is_grad_enabled(){tail})")

    def pointwise(self, step: PointwiseStep) -> str:
        inputs = ", ".join(self.value_of(name) for name in step.inputs)
        params = ", ".join(p.expr for p in step.params)
        if self.autograd == "cpp":
            return f"{var(step.output)} = _ext.pointwise{step.index}([{inputs}], [{params}])"
        return f"{var(step.output)} = _call(_Pointwise{step.index}, {inputs}{', ' if params else ''}{params})"


@dataclass(frozen=True)
class Statement:
    """One statement of ModelNew.forward: the variable it assigns (None for the return), the variables its
    right-hand side reads, and its text. Every variable is assigned once, by a statement before those that read it
    (the graph's order), so which statements forward needs is a liveness question over these fields, never over the
    text (live_statements)."""
    defines: str | None
    reads: frozenset
    text: str


def faithful_switch(step: RegionStep) -> str:
    """The Python a call evaluates to say whether the region is faithful there ("" where nothing switches it)."""
    return " or ".join(f'_tf32("{op}")' for op in step.faithful_switch)


def live_statements(statements: list[Statement]) -> list[Statement]:
    """The statements the return (the last one) needs, directly or through others, in their order: a value nothing
    reads (x.device for a scalar the kernels bake in, a parameter the kernels read through `self`) is not written."""
    live: set[str] = set()
    kept = []
    for statement in reversed(statements):
        if statement.defines is None or statement.defines in live:
            kept.append(statement)
            live |= statement.reads
    return kept[::-1]


def forward_arguments(ref, writer: ForwardWriter) -> list[str]:
    """forward's arguments as the reference declares them: its names (fx renames a placeholder whose name is taken,
    `input` becomes `input_1`), its defaults (fx keeps a default as the placeholder's argument) and the `*` before
    keyword-only ones, so that callers passing them by keyword still can."""
    kinds = {name: parameter.kind for name, parameter in
             list(inspect.signature(type(ref.model).forward).parameters.items())[1:]}
    arguments, starred = [], False
    for node in ref.graph.nodes:
        if node.op != "placeholder":
            continue
        name = str(node.target)
        if kinds.get(name) is inspect.Parameter.KEYWORD_ONLY and not starred:
            arguments.append("*")
        starred = starred or name.startswith("*") or kinds.get(name) is inspect.Parameter.KEYWORD_ONLY
        arguments.append(name if not node.args else f"{name}={writer.value(node.args[0])}")
    return arguments


def renamed_arguments(ref) -> list[str]:
    """`input_1 = input`: the graph's name of an argument fx renamed, bound first in forward."""
    return [f"{node.name} = {node.target}" for node in ref.graph.nodes
            if node.op == "placeholder" and not str(node.target).startswith("*") and node.name != node.target]
