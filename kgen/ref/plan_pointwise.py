"""The rest of the graph (part of the Planner, plan.py): the element-wise ops no region took become kgen
element-wise kernels (pointwise steps: DAGs over at most four tensors and four per-channel parameters), and
every other node stays the reference's PyTorch call (a library step), or is one line naming what kgen cannot
plan."""
from __future__ import annotations

import builtins
import operator
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from kgen.ref import op_calls, ops
from kgen.ref.graph import LIKE_FUNCTIONS, names_of, op_text
from kgen.ref.ir import LibraryStep, Param, PointwiseStep
from kgen.ref.plan_bias import bias_taker_words
from kgen.ref.rewrite import assigned
from kgen.ref.carried import own_function
from kgen.ref.trace import RefError, tensor_shape

# Element-wise ops kgen has no formula for (no kernel of its own): PyTorch runs them as the reference does, between
# kgen's kernels, instead of a refusal. Most have a zero or undefined gradient, which PyTorch's autograd keeps.
ELEMENTWISE_IN_PYTORCH = {torch.sign, torch.sgn, torch.floor, torch.ceil, torch.round, torch.trunc, torch.frac,
                          torch.fmod, torch.remainder, torch.floor_divide, torch.asin, torch.acos, torch.logit,
                          torch.nan_to_num, torch.float_power, operator.floordiv, operator.mod, operator.pow}
ELEMENTWISE_METHODS_IN_PYTORCH = {"sign", "sgn", "floor", "ceil", "round", "trunc", "frac", "fmod", "remainder",
                                  "asin", "acos", "logit", "nan_to_num", "float_power"}
LIBRARY_MODULES = (nn.Conv1d, nn.Conv2d, nn.Conv3d, nn.ConvTranspose1d, nn.ConvTranspose2d, nn.ConvTranspose3d,
                   nn.Linear, nn.Bilinear, nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d, nn.InstanceNorm1d,
                   nn.InstanceNorm2d, nn.InstanceNorm3d, nn.LayerNorm, nn.Dropout, nn.Dropout1d, nn.Dropout2d,
                   nn.Dropout3d, nn.AlphaDropout, nn.MaxPool1d, nn.MaxPool2d, nn.MaxPool3d, nn.AvgPool1d,
                   nn.AvgPool2d, nn.AvgPool3d, nn.AdaptiveAvgPool1d, nn.AdaptiveAvgPool2d, nn.AdaptiveAvgPool3d,
                   nn.AdaptiveMaxPool1d, nn.AdaptiveMaxPool2d, nn.AdaptiveMaxPool3d, nn.Flatten, nn.Identity,
                   nn.Upsample, nn.PixelShuffle, nn.Embedding, nn.Softmax, nn.LogSoftmax, nn.Softmax2d, nn.GLU,
                   nn.FeatureAlphaDropout, nn.LocalResponseNorm, nn.ZeroPad2d, nn.ConstantPad1d, nn.ConstantPad2d,
                   nn.ConstantPad3d, nn.PixelUnshuffle, nn.Unflatten, nn.CosineSimilarity, nn.PairwiseDistance,
                   nn.RReLU, nn.Softmin)
LIBRARY_FUNCTIONS = {torch.matmul, torch.mm, torch.bmm, torch.addmm, F.linear, F.conv1d, F.conv2d, F.conv3d,
                     F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d, F.dropout, F.batch_norm,
                     F.layer_norm, F.instance_norm, F.max_pool1d, F.max_pool2d, F.max_pool3d, F.avg_pool1d,
                     F.avg_pool2d, F.avg_pool3d, F.adaptive_avg_pool1d, F.adaptive_avg_pool2d, F.adaptive_avg_pool3d,
                     F.adaptive_max_pool1d, F.adaptive_max_pool2d, F.adaptive_max_pool3d,
                     F.adaptive_max_pool1d_with_indices, F.adaptive_max_pool2d_with_indices,
                     F.adaptive_max_pool3d_with_indices, F.max_pool1d_with_indices, F.max_pool2d_with_indices,
                     F.max_pool3d_with_indices,
                     F.interpolate, F.softmax, F.log_softmax, torch.flatten, torch.cat, torch.stack, torch.reshape,
                     torch.transpose, torch.permute, torch.squeeze, torch.unsqueeze, torch.softmax, torch.log_softmax,
                     torch.mean, torch.sum, torch.amax, torch.amin, torch.max, torch.min, torch.logsumexp,
                     torch.tensor, operator.getitem, getattr, torch.einsum,
                     # deterministic reductions and reshapes kgen does not fuse: run as the reference runs them
                     torch.std, torch.var, torch.std_mean, torch.var_mean, torch.norm, torch.linalg.norm,
                     torch.linalg.vector_norm, torch.prod, torch.argmax, torch.argmin, torch.chunk,
                     torch.split, torch.flip, torch.roll, F.glu, F.normalize, F.pad, F.pixel_shuffle,
                     F.local_response_norm, F.cosine_similarity, torch.baddbmm, torch.addmv,
                     # made with another tensor's shape only (graph.is_metadata; Planner.like_as_number)
                     *LIKE_FUNCTIONS}
# An element-wise kernel reads at most this many tensors (pointwise/pointwise.cuh's kMaxPointwiseInputs) and
# this many per-channel parameters (groupnorm/region.cuh's kMaxParams).
MAX_POINTWISE_INPUTS = 4
MAX_POINTWISE_PARAMS = 4
SIZE_OPERATORS = {operator.add, operator.sub, operator.mul, operator.floordiv}
# Python's operators a library step writes as such (forward_writer.INFIX, forward_writer.PREFIX), whatever they read.
PYTHON_OPERATORS = {operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv, operator.mod,
                    operator.pow, operator.matmul, operator.gt, operator.lt, operator.ge, operator.le, operator.eq,
                    operator.ne, operator.and_, operator.or_, operator.xor, operator.lshift, operator.rshift,
                    operator.neg, operator.pos, operator.invert, operator.not_, operator.is_}
LIBRARY_METHODS = {"view", "reshape", "flatten", "permute", "transpose", "contiguous", "size", "unsqueeze",
                   "squeeze", "expand", "mean", "sum", "amax", "amin", "max", "min", "logsumexp", "softmax",
                   "matmul", "mm", "bmm", "t", "float", "to", "std", "var", "norm", "prod", "argmax",
                   "argmin", "chunk", "split", "flip", "roll", "view_as", "reshape_as", "expand_as", "type", "clone",
                   "repeat", "unflatten", "narrow", "log_softmax", "double", "half", "bfloat16"}


@dataclass(frozen=True)
class PendingElementwise:
    """An element-wise node no region or batch norm took, waiting to join an element-wise kernel (pointwise_steps):
    the node, the call it makes, and the tensors it reads (fx nodes that are neither numbers nor parameters; the
    parameters themselves for an op on parameters alone)."""
    node: object
    call: op_calls.ElementwiseCall
    tensors: list


class PointwisePlanning:
    """Planner methods for the element-wise kernels outside regions and for library steps."""

    def pointwise_and_library(self) -> None:
        pending: list[PendingElementwise] = []
        conditions: list = []
        for node in self.nodes:
            if node.op in ("placeholder", "output") or node.name in self.claimed:
                continue
            if op_calls.comparison(node) is not None:
                conditions.append(node)  # folded into the where that reads it, or PyTorch's: decided below
                continue
            full = tensor_shape(node)
            found = self.elementwise(node, full) if full is not None else None
            recognised = op_calls.recognise(node, self.module(node)) if full is not None else None
            if found is None and recognised is not None and not self.kernel_dtypes(node, recognised.operands):
                self.library(node, fallback="an element-wise op on a tensor that is not float32, float16 or bfloat16")
                continue
            if found is not None:
                tensors = [o for o in found.operands if isinstance(o, torch.fx.Node) and self.scalar_of(o) is None
                           and self.param_of(o, full) is None]
                if not tensors:
                    # an op on parameters alone (torch.sigmoid(self.gate) of a (1, C, 1, 1) gate): they are the
                    # kernel's input tensors, of the output's shape
                    tensors = [o for o in found.operands if isinstance(o, torch.fx.Node) and self.scalar_of(o) is None]
                if tensors:
                    pending.append(PendingElementwise(node, found, tensors))
                    continue
            if node.op == "call_function" and node.target is torch.where:
                self.library(node, fallback="a where whose condition is no comparison read by it alone (a bool "
                                            "tensor, or a comparison read elsewhere too)")
                continue
            self.library(node, fallback=self.unfused_elementwise(node))
        self.pointwise_steps(pending)
        for node in conditions:
            if node.name not in self.claimed:
                self.library(node, fallback="a comparison read outside kgen's kernels")

    def unfused_elementwise(self, node) -> str:
        """Why an element-wise op runs in PyTorch (the fallback note of its library step), or "" for other ops: a
        spelling of a fused op with arguments kgen's kernels do not take (`alpha=2`, `rounding_mode='floor'`, a
        tensor clamp bound, a number to a tensor power, a mask that is no comparison), or an op kgen has no formula
        for (sign, floor...)."""
        if node.op == "call_function" and node.target in LIBRARY_FUNCTIONS or \
                node.op == "call_method" and node.target in LIBRARY_METHODS or self.size_arithmetic(node):
            return ""
        if (node.op == "call_function" and node.target in op_calls.FUNCTIONS) or \
                (node.op == "call_method" and node.target in op_calls.METHODS):
            return "an element-wise op with arguments kgen's kernels do not take"
        if (node.op == "call_function" and node.target in ELEMENTWISE_IN_PYTORCH) or \
                (node.op == "call_method" and node.target in ELEMENTWISE_METHODS_IN_PYTORCH):
            return "an element-wise op kgen has no kernel formula for"
        return ""

    def pointwise_steps(self, pending) -> None:
        """The element-wise nodes no region took become kgen element-wise kernels: each one a DAG grown back from
        its output (the latest node not yet taken) over the nodes of the same shape whose every reader is
        already inside, reading at most MAX_POINTWISE_INPUTS tensors (a region's output, a library op's, the
        model's input, each maybe broadcast) and at most kMaxParams per-channel parameters."""
        by_name = {p.node.name: p for p in pending}
        taken: set[str] = set()
        for node in [p.node for p in reversed(pending)]:
            if node.name in taken:
                continue
            full = tensor_shape(node)
            members = self.grow_pointwise(node, full, by_name, taken)
            nodes = [n for n in self.nodes if n.name in members]
            inputs = self.pointwise_inputs(members, by_name)
            params: list[Param] = []
            chain = []
            for member in nodes:
                call = by_name[member.name].call
                converted = self.operands(member, call.operands, full, params, inputs={i.name for i in inputs})
                if converted is None:
                    break
                chain.append(self.pw_node(member, call, converted))
            readable = all(_broadcasts(tensor_shape(i), full) for i in inputs) and len(full) <= 5
            if len(chain) != len(nodes) or not readable or len(params) > MAX_POINTWISE_PARAMS:
                why = (f"more than {MAX_POINTWISE_PARAMS} per-channel parameters" if readable and
                       len(chain) == len(nodes) else
                       "it reads a Python number computed at run time: a forward argument, or arithmetic on "
                       "sizes" if any(
                           tensor_shape(i) is None for i in inputs) else
                       "a tensor that does not broadcast to the output, or an output of rank above 5")
                for member in nodes:
                    self.library(member, fallback=f"element-wise op kgen's element-wise kernel cannot take ({why})")
                    taken.add(member.name)
                continue
            if len(names_of(chain)) == 1 and not self.in_place(node):
                # one op: PyTorch's own kernel moves the same bytes, and its call costs less host time than a kgen
                # step's autograd Function (forward and backward) and entry point
                self.library(node, fallback="a lone element-wise op, no fusion to gain")
                taken.add(node.name)
                continue
            step = PointwiseStep(index=0, inputs=[i.name for i in inputs],
                                 input_shapes=[list(tensor_shape(i)) for i in inputs], nodes=chain, params=params,
                                 output=node.name, shape=full)
            for name in names_of(chain):
                self.claimed[name] = step
            taken |= members
            self.steps.append(step)
        # numbered in graph order, as plan() sorts the steps
        pointwise = sorted((s for s in self.steps if isinstance(s, PointwiseStep)), key=lambda s: self.order[s.output])
        for index, step in enumerate(pointwise):
            step.index = self.first_pointwise + index

    def in_place(self, node) -> bool:
        """Whether `node` writes its input: a module built with inplace=True (nn.ReLU(inplace=True)), which
        trace.resolve_inplace rewires but leaves in place (in-place methods and functions it rewrites out of place).
        As a kgen step it writes a new tensor, which keeps what a region saved for its backward intact."""
        return node.op == "call_module" and getattr(self.module(node), "inplace", False) is True

    def grow_pointwise(self, output, full, by_name, taken) -> set:
        """The element-wise nodes of one kernel: `output`, then every pending node of its shape that feeds a
        member and is read only by members, while the tensors read from outside and the parameters stay within
        their limits."""
        members = {output.name}
        grown = True
        while grown:
            grown = False
            covered = members | {op_calls.folded_condition(by_name[m].node).name for m in members
                                 if by_name[m].call.op in ops.WHERE_OPS}
            for member in [n for n in self.nodes if n.name in members]:
                for tensor in by_name[member.name].tensors:
                    if tensor.name in members or tensor.name in taken or tensor.name not in by_name or \
                            tensor_shape(tensor) != full or not all(u.name in covered for u in tensor.users):
                        continue
                    trial = members | {tensor.name}
                    if len(self.pointwise_inputs(trial, by_name)) > MAX_POINTWISE_INPUTS or \
                            len(self.pointwise_params(trial, by_name, full)) > MAX_POINTWISE_PARAMS:
                        continue
                    members = trial
                    grown = True
                    break
                if grown:
                    break
        return members

    def pointwise_params(self, members: set, by_name, full) -> set:
        """The per-channel (or one-value) parameters the members read."""
        return {o.name for m in members for o in by_name[m].call.operands
                if isinstance(o, torch.fx.Node) and self.param_of(o, full) is not None}

    def pointwise_inputs(self, members: set, by_name) -> list:
        """The tensors the members read from outside them, in graph order."""
        outside = {t.name for m in members for t in by_name[m].tensors if t.name not in members}
        return [n for n in self.nodes if n.name in outside]

    def size_arithmetic(self, node) -> bool:
        """Python arithmetic on sizes (`x.size(2) * 2` for a conv's output_size): no tensor among its operands."""
        return node.op == "call_function" and node.target in SIZE_OPERATORS and not any(
            isinstance(a, torch.fx.Node) and tensor_shape(a) is not None for a in node.args)

    def library(self, node, fallback: str = "") -> None:
        """`node` runs as the reference's own PyTorch call between kgen's kernels (a library step): every op kgen does
        not fuse (attention, cumsum, topk, sort, interpolate, embedding...), as long as the emitted file can make the
        same call (library_call)."""
        why = library_call(node)
        if why:
            raise RefError(f"{self.where(node)}: kgen cannot plan {op_text(node, self.modules)}: {why}")
        taker = self.bias_takers.get(node.name)
        step = LibraryStep(node=node, drop_bias=taker is not None, elementwise_fallback=fallback,
                           bias_to=bias_taker_words(taker))
        self.claimed[node.name] = step
        self.steps.append(step)


def library_call(node) -> str:
    """Why the emitted file cannot make `node`'s call as the reference does, or "": a module of the model, a tensor
    method, an attribute, a function of torch, of Python's builtins, an operator, or one of the reference's own file
    (kept whole by torch.fx.wrap: the file carries it) it can; another library's function, not."""
    if node.op in ("call_module", "call_method", "get_attr"):
        return ""
    if node.op != "call_function":
        return f"kgen cannot replay a `{node.op}` step"
    if node.target in (operator.getitem, getattr) or node.target in SIZE_OPERATORS or \
            node.target in PYTHON_OPERATORS:
        return ""
    if own_function(node.target) or node.target is assigned:   # the reference's own, kept whole by torch.fx.wrap
        return ""   # (carried, called by name); item assignment out of place (the file's _assigned)
    name = torch.fx.node._get_qualified_name(node.target)
    if name.startswith(("torch.", "math.")) or getattr(builtins, name.removeprefix("builtins."), None) is node.target:
        return ""   # torch's, Python's math module (fx records math.sqrt of a size), or Python's builtins (len, min,
        # ...: fx names them `len` or `builtins.len`)
    return ("a function of another library, which the emitted file (it imports torch and the reference's own "
            "definitions) cannot call; write it with torch's functions")


def _broadcasts(shape, full) -> bool:
    """Whether a tensor of `shape` broadcasts to `full` (rank at most 5: the element-wise kernel's (N, C, *); a
    lower-rank output is viewed as (N, 1) or (1, 1))."""
    if shape is None or full is None or len(shape) > len(full) or len(full) > 5:
        return False
    aligned = [1] * (len(full) - len(shape)) + list(shape)
    return all(a in (1, f) for a, f in zip(aligned, full))
