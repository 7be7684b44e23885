"""Graph rewrites between tracing and planning (trace.py calls them): spellings that mean the same value are brought
to one form, so that the planner sees one op where the reference may have written several.

- `nn.PReLU` becomes `torch.prelu(x, weight)` with a get_attr of its own for the weight (before the shapes are
  propagated), so that the planner reads the weight as a per-channel parameter: PReLU's weight is (C,) or (1,)
  and applies to dim 1 whatever the rank, which is not how broadcasting would read a (C,) tensor.
- Ops that return their operand's value (after the shapes are propagated, which tell the dtypes): `nn.Identity`,
  dropout with p = 0 (PyTorch returns the input and draws no random numbers), `F.dropout(..., training=False)`,
  `.contiguous()`, `.clone()`, and `.float()` / `.to(dtype)` / `.type(dtype)` to the dtype the tensor already has,
  and a GroupNorm's value cast back to its input's dtype (`gn(x.float()).type(x.dtype)`, guided diffusion's
  GroupNorm32). Left in the graph they would split a fused region in two at a library step that does nothing; the
  casts' readers are kept (CAST_READERS), since at another dtype they change the dtype after them.
- `v, i = torch.max(x, dim)`: fx records a getitem for each name unpacked, used or not. An unused one would keep
  the reduction from fusing (the planner sees its indices read), so getitems nothing reads are dropped.
- An element-wise op with number operands only (relu, `* 2`, hardswish) that reads a layout op (permute,
  transpose, view, reshape, flatten, squeeze, unsqueeze) of a GroupNorm's or an element-wise op's value, the
  layout op's only reader: the two swap (op(layout(x)) == layout(op(x)) element for element), so that the op
  joins the region before the layout op instead of running as a kernel of its own after it.
- `x.sum()` / `torch.mean(x)` over every element of a GroupNorm's or an element-wise op's value (or of a layout
  op's of it, which has the same elements): the sum (mean)
  over all but the batch first, which the region fuses, then PyTorch's over the N values left (the mean of
  equal-sized means is the mean). A max / min is not split: its gradient at ties across samples would differ.
- A tensor forward made with autograd off (`with torch.no_grad():`, guards.GuardTracer marks its node
  `grad_disabled`) is detached where an op made with autograd on reads it (or forward returns it): the same values,
  and no gradient through it, as in the reference (detach_grad_disabled).
- An add, sub, mul, div, minimum or maximum that reads a broadcast made explicit (`t.expand(...)`, `expand_as`,
  `torch.broadcast_to`, or a `repeat` that only repeats size-1 dims) reads `t` itself where broadcasting `t` with
  its other operands gives the same output shape: the same values and, through broadcasting's backward, the same
  gradients (an expand's backward sums over the expanded dims, as broadcasting's does). The op then sees, say, a
  per-(sample, channel) time embedding, which a region reads in its prologue, instead of a full-size tensor.
"""
from __future__ import annotations

import operator

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.fx.passes.shape_prop import TensorMetadata, _extract_tensor_metadata

from kgen.ref import op_calls, ops

DROPOUT_MODULES = (nn.Dropout, nn.Dropout1d, nn.Dropout2d, nn.Dropout3d, nn.AlphaDropout, nn.FeatureAlphaDropout)
DROPOUT_FUNCTIONS = {F.dropout, F.dropout1d, F.dropout2d, F.dropout3d, F.alpha_dropout, F.feature_alpha_dropout,
                     torch.dropout}
SAME_VALUE_METHODS = {"contiguous", "clone"}
SAME_VALUE_FUNCTIONS = {torch.clone}
CAST_METHODS = {"float": torch.float32, "double": torch.float64, "half": torch.float16, "bfloat16": torch.bfloat16}


def prelu_as_function(gm: torch.fx.GraphModule) -> None:
    """`self.act(x)` with act an nn.PReLU -> `torch.prelu(x, self.act.weight)`; every torch.prelu reads its weight
    through a get_attr node no other op reads (the planner takes that node as a per-channel parameter)."""
    graph = gm.graph
    for node in list(graph.nodes):
        if node.op == "call_module" and isinstance(gm.get_submodule(node.target), nn.PReLU) and \
                len(node.args) == 1 and not node.kwargs:
            with graph.inserting_before(node):
                weight = graph.get_attr(f"{node.target}.weight")
                call = graph.call_function(torch.prelu, (node.args[0], weight))
            call.meta.update(node.meta)
            node.replace_all_uses_with(call)
            graph.erase_node(node)
        elif node.op == "call_function" and node.target is torch.prelu and len(node.args) == 2 and \
                isinstance(node.args[1], torch.fx.Node) and node.args[1].op == "get_attr" and \
                len(node.args[1].users) > 1:
            with graph.inserting_before(node):
                weight = graph.get_attr(node.args[1].target)
            node.args = (node.args[0], weight)
    gm.recompile()


def prelu_weights(graph: torch.fx.Graph) -> set:
    """Names of the get_attr nodes that are a torch.prelu's weight (each read by that call alone)."""
    return {n.args[1].name for n in graph.nodes
            if n.op == "call_function" and n.target is torch.prelu and len(n.args) == 2 and
            isinstance(n.args[1], torch.fx.Node) and n.args[1].op == "get_attr" and len(n.args[1].users) == 1}


def _dtype_of(node):
    meta = node.meta.get("tensor_meta") if isinstance(node, torch.fx.Node) else None
    return getattr(meta, "dtype", None)


def _argument(node, position: int, keyword: str, default):
    if keyword in node.kwargs:
        return node.kwargs[keyword]
    return node.args[position] if len(node.args) > position else default


def _same_value_cast(node) -> bool:
    """`.float()`, `.to(torch.float32)`, `.type(torch.float32)` on a tensor that is float32 already (no device,
    no copy= or memory_format= argument: those stay the reference's call)."""
    source = _dtype_of(node.args[0]) if node.args else None
    if source is None:
        return False
    if node.target in CAST_METHODS:
        return len(node.args) == 1 and not node.kwargs and CAST_METHODS[node.target] == source
    if node.target in ("to", "type"):
        rest = list(node.args[1:]) + list(node.kwargs.values())
        return len(rest) == 1 and isinstance(rest[0], torch.dtype) and rest[0] == source and \
            set(node.kwargs) <= {"dtype"}
    return False


def _dtype_read(node):
    """The `n.dtype` node where `node` is `.to(n.dtype)` / `.type(n.dtype)` (nothing else given), else None."""
    rest = list(node.args[1:]) + list(node.kwargs.values())
    if node.op != "call_method" or node.target not in ("to", "type") or len(rest) != 1 or \
            not set(node.kwargs) <= {"dtype"}:
        return None
    dtype = rest[0]
    if isinstance(dtype, torch.fx.Node) and dtype.op == "call_function" and dtype.target is getattr and \
            len(dtype.args) == 2 and dtype.args[1] == "dtype" and isinstance(dtype.args[0], torch.fx.Node):
        return dtype
    return None


def _dtype_source(node):
    """`n` where `node` is `.to(n.dtype)` / `.type(n.dtype)`, else None."""
    read = _dtype_read(node)
    return read.args[0] if read is not None else None


def _group_norm_cast_back(node, gm) -> bool:
    """`gn(x).type(x.dtype)` (or `.to(x.dtype)`) with x the GroupNorm's input, of the same dtype in the trace: the
    cast back of guided diffusion's GroupNorm32 (`super().forward(x.float()).type(x.dtype)`), whose `.float()` is
    dropped as a float32 cast. At another dtype its value is the GroupNorm's rounded to x's dtype, which the region
    the GroupNorm heads gives its output (plan_dtype.py)."""
    operand, source = node.args[0], _dtype_source(node)
    if source is None or not isinstance(operand, torch.fx.Node) or not operand.args:
        return False
    is_gn = (operand.op == "call_module" and isinstance(gm.get_submodule(operand.target), nn.GroupNorm)) or \
        (operand.op == "call_function" and operand.target is F.group_norm)
    # its only reader: every reader of the GroupNorm then reads it through the cast
    return is_gn and len(operand.users) == 1 and operand.args[0] is source and _dtype_of(source) is not None and \
        _dtype_of(source) == _dtype_of(operand)


def _dropout_draws_nothing(node) -> bool:
    """A dropout call with p = 0 or training=False: PyTorch returns its input and draws no random numbers."""
    p = _argument(node, 1, "p", 0.5)
    training = _argument(node, 2, "train" if node.target is torch.dropout else "training", True)
    return (isinstance(p, (int, float)) and p == 0) or training is False


def returns_operand(node, gm: torch.fx.GraphModule) -> bool:
    """Whether `node`'s value is its first operand's (see the module docstring)."""
    if not node.args or not isinstance(node.args[0], torch.fx.Node):
        return False
    if node.op == "call_module":
        module = gm.get_submodule(node.target)
        if isinstance(module, nn.Identity):
            return len(node.args) == 1 and not node.kwargs
        return isinstance(module, DROPOUT_MODULES) and len(node.args) == 1 and module.p == 0
    if node.op == "call_function" and node.target in DROPOUT_FUNCTIONS:
        return not _argument(node, 3, "inplace", False) and _dropout_draws_nothing(node)
    if node.op == "call_function" and node.target in SAME_VALUE_FUNCTIONS:
        return len(node.args) == 1 and set(node.kwargs) <= {"memory_format"}
    if node.op == "call_method" and node.target in SAME_VALUE_METHODS:
        return len(node.args) == 1 and set(node.kwargs) <= {"memory_format"} and not (
            node.target == "contiguous" and (not _traced_contiguous(node.args[0])
                                             or any(_reads_strides(u) for u in node.users)))
    return node.op == "call_method" and (_same_value_cast(node) or _group_norm_cast_back(node, gm))


# Readers whose result depends on their operand's strides, not its values alone: `x.permute(...).contiguous().view(...)`
# needs the contiguous copy (a view of the permuted tensor raises), so that `.contiguous()` stays; so does one that
# forward returns (its caller gets the contiguous tensor the reference gives). (One of a non-contiguous value stays
# in any case: _traced_contiguous.)
STRIDE_READERS = {"view", "view_as", "stride", "data_ptr", "is_contiguous"}


def _traced_contiguous(node) -> bool:
    """Whether `node`'s value was contiguous at the reference's input shapes (ShapeProp's memory format):
    `.contiguous()` of it is then its value itself; of a permuted tensor it is the copy the reference makes, which
    ModelNew makes too (its output contiguous where the reference's is)."""
    meta = node.meta.get("tensor_meta")
    return getattr(meta, "memory_format", None) is torch.contiguous_format


def _reads_strides(node) -> bool:
    return node.op == "output" or (node.op == "call_method" and node.target in STRIDE_READERS)


ALIAS_METHODS = {"contiguous", "float", "double", "half", "bfloat16", "to", "type"}


def may_return_operand(node, gm: torch.fx.GraphModule) -> bool:
    """Whether `node` may return its operand itself (the same storage), before the dtypes are known: nn.Identity,
    dropout that draws nothing (p = 0, or training=False), `.contiguous()` of a contiguous tensor, a cast to its
    own dtype. An in-place op on one of these writes its operand too (trace.resolve_inplace)."""
    if node.op == "call_method":
        return node.target in ALIAS_METHODS
    if node.op == "call_module":
        module = gm.get_submodule(node.target)
        return isinstance(module, nn.Identity) or (isinstance(module, DROPOUT_MODULES) and module.p == 0)
    if node.op == "call_function" and node.target in DROPOUT_FUNCTIONS:
        return _dropout_draws_nothing(node)
    return False


# node.meta key: {reader's name: what it casts to} for the nodes that read this node through a cast the trace dropped:
# None for float32 (`.float()` of a float32 tensor), a node's name for that node's dtype (the GroupNorm32 cast back).
# At another dtype the cast is no longer the same value: the planner makes a region's output dtype follow it
# (plan_dtype.py).
CAST_READERS = "kgen_cast_readers"


def drop_same_value_ops(gm: torch.fx.GraphModule) -> None:
    """Every op whose value is its operand's is removed; its readers read the operand (a cast's readers are kept in
    the operand's meta, CAST_READERS)."""
    graph = gm.graph
    for node in list(graph.nodes):
        if node.op in ("call_module", "call_function", "call_method") and returns_operand(node, gm):
            operand = node.args[0]

            def record(target):   # the cast's readers, and what it casts them to
                operand.meta.setdefault(CAST_READERS, {}).update({user.name: target for user in node.users})

            if node.op == "call_method" and _same_value_cast(node) and _dtype_of(operand) == torch.float32:
                record(None)
            elif node.op == "call_method" and _group_norm_cast_back(node, gm):
                record(_dtype_source(node).name)
            dtype = _dtype_read(node)
            node.replace_all_uses_with(operand)
            graph.erase_node(node)
            if dtype is not None and not dtype.users:   # the `x.dtype` it read
                graph.erase_node(dtype)
    gm.recompile()


def drop_unused_items(gm: torch.fx.GraphModule) -> None:
    """getitem nodes nothing reads (fx records one for every name a tuple is unpacked into)."""
    graph = gm.graph
    for node in list(graph.nodes):
        if node.op == "call_function" and node.target is operator.getitem and not node.users:
            graph.erase_node(node)
    gm.recompile()


LAYOUT_METHODS = {"permute", "transpose", "view", "reshape", "flatten", "squeeze", "unsqueeze", "t"}
LAYOUT_FUNCTIONS = {torch.permute, torch.transpose, torch.reshape, torch.flatten, torch.squeeze, torch.unsqueeze,
                    torch.t}


def _is_layout(node) -> bool:
    return (node.op == "call_method" and node.target in LAYOUT_METHODS) or \
        (node.op == "call_function" and node.target in LAYOUT_FUNCTIONS)


def _module_of(node, gm):
    return gm.get_submodule(node.target) if node.op == "call_module" else None


def _number_operands_op(node, source, gm) -> bool:
    """Whether `node` is an element-wise op of `source` and numbers only, keeping `source`'s dtype."""
    found = op_calls.recognise(node, _module_of(node, gm))
    if found is None or ops.OPS[found.op].arity != len(found.operands) or _dtype_of(node) != _dtype_of(source):
        return False
    read = []
    torch.fx.node.map_arg((node.args, node.kwargs), read.append)
    numbers = [o for o in found.operands if o is not source]
    return bool(read) and all(n is source for n in read) and \
        all(isinstance(o, (int, float)) and not isinstance(o, bool) for o in numbers)


def _region_value(node, gm) -> bool:
    """A GroupNorm's value or an element-wise op's (what a region may end with)."""
    if node.op == "call_module" and isinstance(gm.get_submodule(node.target), nn.GroupNorm):
        return True
    if node.op == "call_function" and node.target is F.group_norm:
        return True
    return node.op in ("call_function", "call_method", "call_module") and \
        op_calls.recognise(node, _module_of(node, gm)) is not None


def elementwise_before_layout(gm: torch.fx.GraphModule) -> None:
    """op(layout(x)) -> layout(op(x)) (see the module docstring), repeated along a chain of such ops."""
    graph = gm.graph
    moved = True
    while moved:
        moved = False
        for layout in list(graph.nodes):
            if not _is_layout(layout) or len(layout.users) != 1 or not layout.args or \
                    not isinstance(layout.args[0], torch.fx.Node) or not _region_value(layout.args[0], gm):
                continue
            user = next(iter(layout.users))
            source = layout.args[0]
            if not _number_operands_op(user, layout, gm) or "tensor_meta" not in source.meta:
                continue
            with graph.inserting_before(layout):
                early = graph.node_copy(user, lambda n: source if n is layout else n)
            early.meta = dict(user.meta, tensor_meta=source.meta["tensor_meta"])
            layout.args = (early,) + tuple(layout.args[1:])
            layout.meta = dict(layout.meta, tensor_meta=user.meta["tensor_meta"])
            user.replace_all_uses_with(layout)
            graph.erase_node(user)
            moved = True
    gm.recompile()


FULL_REDUCTIONS = {"sum": torch.sum, "mean": torch.mean, torch.sum: torch.sum, torch.mean: torch.mean}


def full_reductions_per_sample(gm: torch.fx.GraphModule) -> None:
    """torch.sum(x) -> torch.sum(torch.sum(x, (1, ..., rank - 1))), the same for the mean (module docstring)."""
    graph = gm.graph
    for node in list(graph.nodes):
        if node.op not in ("call_method", "call_function") or node.target not in FULL_REDUCTIONS or \
                len(node.args) != 1 or node.kwargs or not isinstance(node.args[0], torch.fx.Node):
            continue
        source = node.args[0]
        through = None
        if _is_layout(source) and len(source.users) == 1 and source.args and isinstance(source.args[0], torch.fx.Node):
            through, source = source, source.args[0]   # x.flatten(1).sum(): every element of x all the same
        meta = source.meta.get("tensor_meta")
        if meta is None or len(meta.shape) < 2 or meta.dtype != torch.float32 or not _region_value(source, gm):
            continue
        function = FULL_REDUCTIONS[node.target]
        with graph.inserting_before(node):
            per_sample = graph.call_function(function, (source, tuple(range(1, len(meta.shape)))))
        per_sample.meta = dict(node.meta, tensor_meta=_extract_tensor_metadata(
            torch.empty(meta.shape[0], dtype=meta.dtype, device="meta")))
        node.target, node.op, node.args = function, "call_function", (per_sample,)
        if through is not None:
            graph.erase_node(through)
    gm.recompile()


EXPAND_METHODS = {"expand", "expand_as", "broadcast_to"}
BROADCASTING_OPS = {"add", "sub", "mul", "div", "minimum", "maximum"}   # symmetric in their operands' shapes


def _shape(node) -> tuple | None:
    meta = node.meta.get("tensor_meta") if isinstance(node, torch.fx.Node) else None
    return tuple(meta.shape) if meta is not None and hasattr(meta, "shape") else None


def _expanded_source(node):
    """The tensor an explicit broadcast node repeats without changing a value (expand, expand_as, broadcast_to, or a
    repeat of size-1 dims only), else None."""
    if not node.args or not isinstance(node.args[0], torch.fx.Node):
        return None
    source = node.args[0]
    if (node.op == "call_method" and node.target in EXPAND_METHODS) or \
            (node.op == "call_function" and node.target is torch.broadcast_to):
        return source
    if node.op == "call_method" and node.target == "repeat" and not node.kwargs:
        shape, sizes = _shape(source), node.args[1:]
        if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)):
            sizes = tuple(sizes[0])
        if shape is None or not all(isinstance(k, int) for k in sizes) or len(sizes) < len(shape):
            return None
        padded = (1,) * (len(sizes) - len(shape)) + shape
        return source if all(k == 1 or d == 1 for k, d in zip(sizes, padded)) else None
    return None


def _reads_broadcast(user, expand, source, gm) -> bool:
    """Whether `user` is a broadcasting element-wise op whose output keeps its shape with `source` in place of
    `expand`."""
    found = op_calls.recognise(user, _module_of(user, gm))
    if found is None or found.op not in BROADCASTING_OPS or expand not in found.operands or \
            (user.op == "call_method" and user.target.endswith("_")):
        return False
    shapes = [_shape(source if o is expand else o) for o in found.operands if isinstance(o, torch.fx.Node)]
    if any(shape is None for shape in shapes) or _shape(user) is None:
        return False
    try:
        return tuple(torch.broadcast_shapes(*shapes)) == _shape(user)
    except RuntimeError:
        return False


def broadcast_operands(gm: torch.fx.GraphModule) -> None:
    """op(expand(t), y) -> op(t, y) (see the module docstring); an expand nothing else reads is dropped."""
    graph = gm.graph
    for node in list(graph.nodes):
        source = _expanded_source(node)
        # a 0-dim source would not widen its operands' dtype where the expanded tensor does (type promotion)
        if source is None or not _shape(source) or _dtype_of(source) != _dtype_of(node):
            continue
        for user in list(node.users):
            if _reads_broadcast(user, node, source, gm):
                user.replace_input_with(node, source)
        if not node.users:
            graph.erase_node(node)
    gm.recompile()


def detach_grad_disabled(gm: torch.fx.GraphModule) -> None:
    """x made with autograd off and read where it is on -> x.detach() there (see the module docstring). Parameters and
    inputs (get_attr, placeholder) are leaves whatever the mode they were first read in: never detached."""
    graph = gm.graph
    for node in list(graph.nodes):
        if not node.meta.get("grad_disabled") or node.op in ("get_attr", "placeholder") or \
                not isinstance(node.meta.get("tensor_meta"), TensorMetadata):
            continue
        outside = [user for user in node.users if not user.meta.get("grad_disabled")]
        if not outside:
            continue
        with graph.inserting_after(node):
            detached = graph.call_method("detach", (node,))
        detached.meta = {key: value for key, value in node.meta.items() if key != "grad_disabled"}
        for user in outside:
            user.replace_input_with(node, detached)
    gm.recompile()


def after_shapes(gm: torch.fx.GraphModule) -> None:
    """The rewrites that read the propagated shapes and dtypes, in order."""
    detach_grad_disabled(gm)
    drop_same_value_ops(gm)
    drop_unused_items(gm)
    broadcast_operands(gm)
    elementwise_before_layout(gm)
    full_reductions_per_sample(gm)


def assigned(tensor, index, value):
    """`tensor[index] = value` out of place: a copy with the assignment made (what trace.resolve_inplace rewrites
    item assignment into; the emitted file carries it as `_assigned`, ref/solution.py.j2)."""
    copy = tensor.clone()
    copy[index] = value
    return copy
