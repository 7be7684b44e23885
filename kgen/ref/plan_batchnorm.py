"""Training-mode BatchNorm as a kgen step (part of the Planner, plan.py): the BatchNorm module, the
element-wise DAG after it and a window pooling after that (batchnorm/train.cuh's kernels)."""
from __future__ import annotations

import torch
import torch.nn as nn

from kgen.ref.graph import is_metadata, library_class, names_of, peelable
from kgen.ref.ir import BatchNormStep, Operand, Param, ReduceKind
from kgen.ref.trace import tensor_shape

# Each batch norm module kgen plans, with the input ranks it accepts (the emitted step checks them at run time).
BATCH_NORM_RANKS = {nn.BatchNorm1d: (2, 3), nn.BatchNorm2d: (4,), nn.BatchNorm3d: (5,)}
BATCH_NORMS = tuple(BATCH_NORM_RANKS)


class BatchNormPlanning:
    """Mixin of the Planner: plans each BatchNorm module no region claimed."""

    def batch_norm(self, bn) -> None:
        """A BatchNorm module with the element-wise chain after it (each value read only by the next) and a
        window pooling after that: one kgen step. The bias of a conv / linear read only by it is peeled off,
        since the batch statistics remove any per-channel shift (it still enters the running mean)."""
        full = tensor_shape(bn)
        x = bn.args[0] if bn.args else None
        if full is None or not isinstance(x, torch.fx.Node) or tensor_shape(x) != full or len(full) > 5:
            return  # left to PyTorch's own batch norm
        # The element-wise DAG after it: every node whose tensor operands the step already computes joins, in
        # graph order; then trailing nodes leave until only the last one is read outside the step.
        params: list[Param] = []
        inside = {bn.name}
        chain = self.absorb_after(bn, full, inside, params)
        while True:
            last = next(n for n in reversed(self.nodes) if n.name in inside)
            leaving = [n for n in self.nodes if n.name in inside and n is not last and
                       any(u.name not in inside and not is_metadata(u) for u in n.users)]
            if not leaving or not chain:
                break
            inside -= names_of([chain.pop()])
        if leaving:
            return  # a value inside is read elsewhere too: PyTorch's batch norm
        params[:] = used_params(chain, params)
        pool = None
        users = [u for u in last.users if not is_metadata(u)]
        if len(users) == 1 and users[0].name not in self.claimed:
            found = self.reduction(users[0], last, full)
            if found is not None and found.kind is ReduceKind.WINDOW:
                pool = found
        module = self.module(bn)
        xmod = self.module(x)
        peel = (peelable(xmod) and len(x.args) == 1 and not x.kwargs and
                all(u is bn or is_metadata(u) for u in x.users) and (not isinstance(xmod, nn.Linear) or len(full) == 2))
        output = pool.defined if pool is not None else last
        number = self.first_batchnorm + sum(isinstance(s, BatchNormStep) for s in self.steps)
        step = BatchNormStep(index=number, input=x.name, bn=bn.name, bn_module=bn.target, bn_type=type(module).__name__,
                             ranks=BATCH_NORM_RANKS[library_class(module, BATCH_NORM_RANKS)], nodes=chain,
                             params=params, shape=full, conv_bias=f"{self.attr(x.target)}.bias" if peel else "",
                             output=output.name, out_shape=tensor_shape(output) or [])
        if pool is not None:
            step.pool_op, step.window, step.window_expr = pool.op, pool.window, pool.window_expr
        for name in {bn.name, output.name} | names_of(chain):
            self.claimed[name] = step
        if peel:
            self.bias_takers[x.name] = step
        self.steps.append(step)


def used_params(nodes, params: list) -> list:
    """The parameters a (trimmed) DAG still reads, renumbered in order."""
    used = sorted({o.ref for n in nodes for o in n.operands if o.is_param})
    renumber = {old: new for new, old in enumerate(used)}
    for node in nodes:
        node.operands = [Operand.of_param(renumber[o.ref]) if o.is_param else o for o in node.operands]
    return [params[k] for k in used]
