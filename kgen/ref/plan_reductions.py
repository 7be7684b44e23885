"""The reductions a GroupNorm region absorbs after it (part of the Planner, plan.py): torch.mean / sum /
amax / amin / max / min / logsumexp over channels, spatial dims or all but the batch (also through a view that
flattens all but the batch), window pooling (nn.MaxPool/AvgPool 1d-3d and their functional spellings) where
kernel == stride, and global pooling (adaptive average / max pooling to size 1) as the mean / max over the spatial
dims."""
from __future__ import annotations

import operator
from dataclasses import dataclass, replace

import torch
import torch.nn as nn
import torch.nn.functional as F

from kgen.ref.graph import as_tuple, attribute_arguments, is_metadata
from kgen.ref.ir import Operand, PwNode, ReduceKind, ReduceOp
from kgen.ref.trace import tensor_shape

_MAX, _MEAN = ReduceOp.MAX, ReduceOp.MEAN
REDUCTION_OPS = {"mean": ReduceOp.MEAN, "sum": ReduceOp.SUM, "amax": ReduceOp.MAX, "amin": ReduceOp.MIN,
                 "max": ReduceOp.MAX, "min": ReduceOp.MIN, "logsumexp": ReduceOp.LOGSUMEXP}
POOLS = {nn.MaxPool1d: _MAX, nn.MaxPool2d: _MAX, nn.MaxPool3d: _MAX,
         nn.AvgPool1d: _MEAN, nn.AvgPool2d: _MEAN, nn.AvgPool3d: _MEAN}
POOL_DIMS = {nn.MaxPool1d: 1, nn.MaxPool2d: 2, nn.MaxPool3d: 3, nn.AvgPool1d: 1, nn.AvgPool2d: 2, nn.AvgPool3d: 3}
# The functional spellings: (op, spatial dims, argument names after the input).
_MAX_ARGS = ("kernel_size", "stride", "padding", "dilation", "ceil_mode", "return_indices")
_AVG_ARGS = ("kernel_size", "stride", "padding", "ceil_mode", "count_include_pad", "divisor_override")
FUNCTIONAL_POOLS = {F.max_pool1d: (_MAX, 1, _MAX_ARGS), F.max_pool2d: (_MAX, 2, _MAX_ARGS),
                    F.max_pool3d: (_MAX, 3, _MAX_ARGS), F.avg_pool1d: (_MEAN, 1, _AVG_ARGS),
                    F.avg_pool2d: (_MEAN, 2, _AVG_ARGS), F.avg_pool3d: (_MEAN, 3, _AVG_ARGS)}
# Adaptive pooling to an output of size 1 (global average / max pooling): the mean or max over the spatial dims,
# kept as (N, C, 1, ...). Modules and functional spellings: (op, spatial dims).
ADAPTIVE_POOLS = {nn.AdaptiveAvgPool1d: (_MEAN, 1), nn.AdaptiveAvgPool2d: (_MEAN, 2),
                  nn.AdaptiveAvgPool3d: (_MEAN, 3), nn.AdaptiveMaxPool1d: (_MAX, 1),
                  nn.AdaptiveMaxPool2d: (_MAX, 2), nn.AdaptiveMaxPool3d: (_MAX, 3),
                  F.adaptive_avg_pool1d: (_MEAN, 1), F.adaptive_avg_pool2d: (_MEAN, 2),
                  F.adaptive_avg_pool3d: (_MEAN, 3), F.adaptive_max_pool1d: (_MAX, 1),
                  F.adaptive_max_pool2d: (_MAX, 2), F.adaptive_max_pool3d: (_MAX, 3)}


@dataclass(frozen=True)
class FoundReduction:
    """A reduction or window pooling that reads a region's result (or a batch norm step's), as the Planner
    recognised it."""
    defined: object               # the fx node defining the reduced value (a torch.max / min's `[0]` / `.values`)
    kind: ReduceKind              # which dims it reduces (never NONE)
    op: ReduceOp                  # its operator
    keepdim: bool                 # the reduced dims are kept as size 1
    window: tuple = ()            # WINDOW: the kernel size (== stride) per spatial dim
    window_expr: str = ""         # WINDOW: Python expression of the window at run time
    through: object = None        # the flattening view or permute it reads the result through (fx node), or None


@dataclass(frozen=True)
class ReductionCall:
    """A reduction call over given dims as written (torch.mean(x, (2, 3)), x.amax(1, keepdim=True), torch.max(x, 1)'s
    values), before the planner decides which ReduceKind its dims are of the region's value."""
    op: ReduceOp
    dims: list                    # the reduced dims, sorted, each in [0, rank)
    keepdim: bool
    defined: object               # the fx node defining the reduced value (a max / min's `[0]` / `.values`)


def is_values_output(node) -> bool:
    """Whether `node` takes the values of a torch.max / torch.min (x, dim) result: `[0]` or `.values`."""
    return node.op == "call_function" and (
        (node.target is operator.getitem and node.args[1] == 0) or
        (node.target is getattr and node.args[1] == "values"))


# Element-wise ops that commute with a max or min reduction: op(max(v)) == max(op(v)), value and gradient. Each is
# the identity between its bounds and constant beyond them (non-decreasing, so the extreme of op(v) is op of the
# extreme, and the first extreme of op(v) is the first extreme of v wherever the result lies between the bounds).
# Beyond a bound the derivative is 0 whichever element the reduction picks. On a bound, relu and hardtanh have a
# zero derivative in PyTorch, and so does clamp where its gradient is 0 on a bound (PyTorch 2.15; the emitted file
# builds clamp's derivative to match the PyTorch that runs it, _clamp_gradient_flags). Where clamp passes the
# gradient on a bound (PyTorch 2.11), the moved clamp routes it differently only where a value lies exactly on a
# bound and the reduction's extreme is not that value. minimum / maximum with a scalar are not here: their
# derivative at a tie is 1/2.
COMMUTE_WITH_EXTREMES = {"clamp", "hardtanh", "relu"}


class ReductionPlanning:
    """Mixin of the Planner: recognises the reduction a region's result flows into."""

    def reduction(self, node, source, full) -> FoundReduction | None:
        """The reduction `node` makes of `source` (of shape `full`), or None."""
        rank = len(full)
        module = self.module(node)
        if module is not None and type(module) in POOLS:
            dims = POOL_DIMS[type(module)]
            if dims != rank - 2:
                return None
            k = as_tuple(module.kernel_size, dims)
            s = as_tuple(module.stride if module.stride is not None else module.kernel_size, dims)
            pad = as_tuple(module.padding, dims)
            dil = as_tuple(getattr(module, "dilation", 1), dims)
            if k != s or any(pad) or any(d != 1 for d in dil) or module.ceil_mode or \
                    getattr(module, "return_indices", False) or getattr(module, "divisor_override", None):
                return None
            window_expr = f"_window({self.attr(node.target)}.kernel_size, {dims})"
            return FoundReduction(node, ReduceKind.WINDOW, POOLS[type(module)], False, k, window_expr)
        if node.op == "call_function" and node.target in FUNCTIONAL_POOLS:
            return self.functional_pool(node, source, rank)
        adaptive = self.global_pool(node, module, source, rank)
        if adaptive is not None:
            return adaptive
        call = self.reduction_call(node, source, rank)
        if call is None:
            return None
        kind = _reduce_kind(call.dims, rank)
        if kind is None:
            return None
        return FoundReduction(call.defined, kind, call.op, call.keepdim)

    def reduction_call(self, node, source, rank) -> ReductionCall | None:
        """The ReductionCall of a torch.mean / sum / amax / amin / max / min / logsumexp of `source` over given dims
        (the values of a max / min with one dim, its indices unread), else None."""
        op_name = None
        args, kw = list(node.args), dict(node.kwargs)
        if node.op == "call_method" and node.target in REDUCTION_OPS:
            op_name = node.target
        elif node.op == "call_function" and getattr(node.target, "__name__", None) in REDUCTION_OPS and \
                node.target in (torch.mean, torch.sum, torch.amax, torch.amin, torch.max, torch.min, torch.logsumexp):
            op_name = node.target.__name__
        if op_name is None or not args or args[0] is not source:
            return None
        # PyTorch also takes NumPy's names, `axis` and `keepdims` (torch.sum(x, axis=(2, 3), keepdims=True))
        dim = kw.get("dim", kw.get("axis", args[1] if len(args) > 1 else None))
        keepdim = kw.get("keepdim", kw.get("keepdims", args[2] if len(args) > 2 else False))
        if dim is None or "dtype" in kw or not isinstance(keepdim, bool):
            return None
        dims = sorted({d % rank for d in ((dim,) if isinstance(dim, int) else tuple(dim))})
        defined = node
        if op_name in ("max", "min"):
            if not isinstance(dim, int):
                return None
            users = list(node.users)
            if len(users) != 1 or not is_values_output(users[0]):
                return None  # the indices are used: keep PyTorch's max/min
            defined = users[0]
        return ReductionCall(REDUCTION_OPS[op_name], dims, keepdim, defined)

    def permuted_reduction(self, node, source, full) -> FoundReduction | None:
        """A reduction over dims of a permute / transpose of the region's result (x.permute(0, 2, 3, 1).amax(-1)),
        the permute's only reader, without keepdim and with the dims it keeps in their order in x: the same
        reduction over the dims of x they are (the channel max here), the same (N, H, W) result."""
        order = _permutation(node, len(full))
        if order is None or len(node.users) != 1:
            return None
        call = self.reduction_call(next(iter(node.users)), node, len(full))
        if call is None:
            return None
        kept = [order[d] for d in range(len(full)) if d not in call.dims]
        kind = _reduce_kind(sorted(order[d] for d in call.dims), len(full))
        if call.keepdim or kept != sorted(kept) or kind is None:
            return None
        return FoundReduction(call.defined, kind, call.op, False, through=node)

    def flattened_reduction(self, node, source, full) -> FoundReduction | None:
        """A reduction over all but the batch written through a flattening view: x.view(x.size(0), -1).mean(1),
        torch.flatten(x, 1).amax(dim=1), x.reshape(n, -1).sum(-1, keepdim=True)...; or over the spatial dims (or
        all but the batch) through a view that flattens the spatial dims only: x.view(n, c, -1).mean(-1),
        x.flatten(2).amax(2). The view (any view, reshape or flatten whose result is (N, C * spatial) or
        (N, C, spatial)) is the region's own: nothing reads it but the reduction."""
        flattening = (node.op == "call_method" and node.target in ("view", "reshape", "flatten")) or \
            (node.op == "call_function" and node.target in (torch.flatten, torch.reshape))
        if not flattening or len(full) < 3 or len(node.users) != 1:
            return None
        plane = 1
        for size in full[2:]:
            plane *= size
        shape = tensor_shape(node)
        if shape == [full[0], full[1] * plane]:
            kinds = {ReduceKind.CHANNEL: ReduceKind.SAMPLE}   # over dim 1 of the (N, C * spatial) view: all but N of x
        elif len(full) >= 4 and shape == [full[0], full[1], plane]:
            # x.view(n, c, -1).mean(-1): the (N, C, spatial) view, over its last dim (all spatial dims) or all but N
            kinds = {ReduceKind.PLANE: ReduceKind.PLANE, ReduceKind.SAMPLE: ReduceKind.SAMPLE}
        else:
            return None
        found = self.reduction(next(iter(node.users)), node, shape)
        if found is None or found.kind not in kinds:
            return None
        return replace(found, kind=kinds[found.kind], window=(), window_expr="", through=node)

    def functional_pool(self, node, source, rank) -> FoundReduction | None:
        """F.max_pool2d(x, 2) and the like: a window reduction where kernel == stride, no padding, dilation 1,
        no ceil mode, no indices, no divisor override; the window is a constant of the graph."""
        op, dims, names = FUNCTIONAL_POOLS[node.target]
        if dims != rank - 2 or not node.args or node.args[0] is not source:
            return None
        given = dict(zip(names, node.args[1:]), **node.kwargs)
        if given.get("kernel_size") is None or any(isinstance(v, torch.fx.Node) for v in given.values()):
            return None
        k = as_tuple(given["kernel_size"], dims)
        s = as_tuple(given.get("stride") or given["kernel_size"], dims)
        if k != s or any(as_tuple(given.get("padding", 0), dims)) or \
                any(d != 1 for d in as_tuple(given.get("dilation", 1), dims)) or given.get("ceil_mode") or \
                given.get("return_indices") or given.get("divisor_override") is not None:
            return None
        # a kernel size the model holds (F.max_pool2d(y, self.k)) is read from it at run time, as a module's is
        written = attribute_arguments(self.ref.forward_lines.get(node.name, ""), self.ref.model,
                                      {f.__name__ for f in FUNCTIONAL_POOLS},
                                      {"kernel_size": (1, given["kernel_size"]), "stride": (2, given.get("stride"))})
        expr = written.get("kernel_size")
        if expr is not None and (given.get("stride") is None or written.get("stride") == expr):
            return FoundReduction(node, ReduceKind.WINDOW, op, False, k, f"_window({expr}, {dims})")
        return FoundReduction(node, ReduceKind.WINDOW, op, False, k, repr(tuple(k)))

    def global_pool(self, node, module, source, rank) -> FoundReduction | None:
        """nn.AdaptiveAvgPool2d(1), F.adaptive_max_pool3d(x, (1, 1, 1)) and the like: the mean or max over the
        spatial dims, keepdim (kPlane). Other output sizes, and max pooling that returns its indices, stay in
        PyTorch."""
        if module is not None and type(module) in ADAPTIVE_POOLS:
            (op, dims), size = ADAPTIVE_POOLS[type(module)], module.output_size
            indices = getattr(module, "return_indices", False)
        elif node.op == "call_function" and node.target in ADAPTIVE_POOLS:
            if not node.args or node.args[0] is not source:
                return None
            op, dims = ADAPTIVE_POOLS[node.target]
            given = dict(zip(("output_size", "return_indices"), node.args[1:]), **node.kwargs)
            size, indices = given.get("output_size"), given.get("return_indices", False)
        else:
            return None
        if dims != rank - 2 or indices is not False or isinstance(size, torch.fx.Node) or \
                any(s != 1 for s in as_tuple(size, dims)):
            return None
        return FoundReduction(node, ReduceKind.PLANE, op, True)

    def fold_after_extreme(self, step, output_node):
        """Moves the ops of COMMUTE_WITH_EXTREMES that read a max / min reduction's output, one after another
        (each the only reader of the one before, with scalar constants), before the reduction, into the region's
        epilogue: the separate element-wise kernel on the reduced tensor, forward and backward, goes (L2-85's
        clamp after its max pooling). Returns the node that is now the region's output."""
        if not step.reduce_op.is_extreme:
            return output_node
        out_shape = tensor_shape(output_node)
        while True:
            readers = [u for u in output_node.users if not is_metadata(u)]
            if len(readers) != 1 or len(output_node.users) != 1 or readers[0].name in self.claimed:
                return output_node
            user = readers[0]
            found = self.elementwise(user, out_shape)
            if found is None or found.op not in COMMUTE_WITH_EXTREMES:
                return output_node
            converted = []
            for operand in found.operands:
                scalar = self.scalar_of(operand)
                if operand is output_node:
                    converted.append(Operand.of_value(step.result))
                elif scalar is not None:
                    converted.append(Operand.of_scalar(scalar))
                else:
                    return output_node
            moved = self.pw_node(user, found, converted)
            moved.name = f"{user.name}_before_{output_node.name}"
            if moved.name in self.order:
                return output_node
            step.epilogue.append(moved)
            step.result = moved.name
            what = found.op if user.name == found.op else f"{found.op} ({user.name})"
            step.notes.append(f"{what} moved before the {step.reduce_op.word}, which it commutes with")
            self.claimed[user.name] = step
            output_node = user


def _reduce_kind(dims: list, rank: int) -> ReduceKind | None:
    """The region's reduction over sorted `dims` of a rank-`rank` value: channels, spatial dims, all but N."""
    if dims == [1]:
        return ReduceKind.CHANNEL
    if rank > 2 and dims == list(range(2, rank)):
        return ReduceKind.PLANE
    if dims == list(range(1, rank)):
        return ReduceKind.SAMPLE
    return None


def _permutation(node, rank: int) -> list | None:
    """For each dim of a permute's or transpose's result, the dim of its input it is; None for anything else."""
    method = node.op == "call_method"
    if (method and node.target == "permute") or (not method and node.op == "call_function" and
                                                  node.target is torch.permute):
        given = list(node.args[1:]) or [node.kwargs.get("dims")]
        if len(given) == 1 and isinstance(given[0], (list, tuple)):
            given = list(given[0])
        if len(given) != rank or not all(isinstance(d, int) for d in given):
            return None
        order = [d % rank for d in given]
        return order if sorted(order) == list(range(rank)) else None
    if (method and node.target == "transpose") or (not method and node.op == "call_function" and
                                                    node.target is torch.transpose):
        given = list(node.args[1:3]) + [node.kwargs.get(k) for k in ("dim0", "dim1")][len(node.args) - 1:]
        if len(given) != 2 or not all(isinstance(d, int) for d in given):
            return None
        a, b = (d % rank for d in given)
        order = list(range(rank))
        order[a], order[b] = b, a
        return order
    return None
