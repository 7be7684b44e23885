"""`self.training` in a traced forward (part of the first room of `kgen emit --ref`).

fx evaluates `self.training` while tracing: `F.dropout(x, 0.3, training=self.training)` would be baked in as
training=True. trace.py traces the model in both modes. Where the two graphs run the same ops and differ only in
arguments that are the mode in one and its negation in the other, those arguments are the flag: one graph serves both
modes, the emitted call reading `self.training` there. Where they differ in anything else (the forward branches on
`self.training`, or passes another number in each mode), each mode gets its own graph and plan, and the emitted
forward runs the one of the model's mode (emit.mode_plans, codegen.mode_solution_context).
"""
from __future__ import annotations

import torch
import torch.fx


class TrainingFlag:
    """`self.training` in an argument of the traced graph: the mode it was traced in, written `self.training`."""

    def __init__(self, traced: bool):
        self.traced = traced

    def __bool__(self) -> bool:
        return self.traced

    def __repr__(self) -> str:
        return "self.training"


def training_flags(graph: torch.fx.Graph, other_graph: torch.fx.Graph, mode: bool) -> list | None:
    """(node name, "args" or "kwargs", position or keyword) of every argument that is `self.training`: `mode` in
    `graph` (traced in that mode), its negation in `other_graph`. None where the graphs differ otherwise: the forward
    computes something else in each mode, which gets a plan of its own."""
    nodes, other_nodes = list(graph.nodes), list(other_graph.nodes)

    def same_op(a, b) -> bool:
        constants = a.op == b.op == "get_attr" and all(str(n.target).startswith("_tensor_constant") for n in (a, b))
        return a.op == b.op and (a.target == b.target or constants)

    if len(nodes) != len(other_nodes) or not all(same_op(a, b) for a, b in zip(nodes, other_nodes)):
        return None
    found = []
    for a, b in zip(nodes, other_nodes):
        if a.op == "placeholder":
            continue
        pairs = [("args", i, x, y) for i, (x, y) in enumerate(zip(a.args, b.args))]
        pairs += [("kwargs", k, a.kwargs[k], b.kwargs.get(k)) for k in a.kwargs]
        for where, key, x, y in pairs:
            if x is mode and y is (not mode):
                found.append((a.name, where, key))
            elif not isinstance(x, (torch.fx.Node, list, tuple, dict)) and (type(x) is not type(y) or x != y):
                return None   # `0.5 if self.training else 1.0`: a number of each mode
    return found


def mark_training_flags(graph: torch.fx.Graph, flags: list, mode: bool) -> None:
    nodes = {n.name: n for n in graph.nodes}
    flag = TrainingFlag(mode)
    for name, where, key in flags:
        node = nodes[name]
        if where == "args":
            node.args = tuple(flag if i == key else v for i, v in enumerate(node.args))
        else:
            node.kwargs = {**node.kwargs, key: flag}
