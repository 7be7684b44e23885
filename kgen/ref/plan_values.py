"""Tensors other steps compute that a region reads as parameters (part of the Planner): a time embedding through a Linear
viewed (N, C, 1, 1) before a GroupNorm, FiLM's or a scale-shift norm's scale and shift after it, a per-sample gate. One
that varies along the samples makes its region `merged` (RegionStep.merged): the region's entry points run it on its
samples merged into channels (kgen/templates/cuda/groupnorm/merged.cuh), where it is one value per merged channel.
"""
from __future__ import annotations

import torch

from kgen.ref.graph import is_metadata
from kgen.ref.ir import BatchNormStep, LibraryStep, Param, ReduceKind, RegionStep
from kgen.ref.trace import tensor_dtype, tensor_shape

# The dtypes such a tensor may have: those the kernels read (the Planner's KERNEL_DTYPES, without "unseen").
VALUE_DTYPES = (torch.float32, torch.float16, torch.bfloat16)


class ValuePlanning:
    def anchor_order(self, step) -> float:
        """Where a step runs among the graph's nodes: at its anchor (step_anchor), a region reading tensors other steps
        compute per sample no earlier than after the last of them (`h * (1 + scale)` computes `1 + scale` after the
        GroupNorm)."""
        values = [self.order[p.value] + 0.5 for p in step.params if p.value] if isinstance(step, RegionStep) else []
        return max([self.order[step_anchor(step)]] + values)

    def value_operand(self, value, full: list):
        """A Param for a tensor another step computes that broadcasts against `full` per (sample, channel), per sample
        or per channel (a time embedding through a Linear viewed (N, C, 1, 1); a FiLM scale; a per-sample gate), while
        a region absorbs its ops (self.region_values, which it must not depend on: else None)."""
        if self.region_values is None or not isinstance(value, torch.fx.Node) or value.op == "get_attr" \
                or value.name in self.region_values or len(full) < 2:
            return None
        shape = tensor_shape(value)
        if shape is None or len(shape) > len(full) or tensor_dtype(value) not in VALUE_DTYPES:
            return None
        aligned = (1,) * (len(full) - len(shape)) + tuple(shape)
        if any(s != 1 for s in aligned[2:]) or aligned[0] not in (1, full[0]) or aligned[1] not in (1, full[1]) \
                or list(aligned) == list(full) or self.depends_on(value, self.region_values - {self.region_input}):
            return None
        # It varies along the samples where it has N of them, or may where the reference was traced at a batch of
        # one, unless it is made from the model's parameters alone (`torch.sigmoid(self.gate).view(1, -1, 1, 1)`)
        # or is one value (`self.log_scale.exp()`, `t.mean()`).
        per_sample = (aligned[0] != 1 or (full[0] == 1 and aligned[1] != 1)) and self.reads_an_input(value)
        return Param(expr="", shape=tuple(shape), label=value.name, value=value.name, along_channels=aligned[1] != 1,
                     per_sample=per_sample)

    def reads_an_input(self, node) -> bool:
        """Whether `node`'s value depends on the data of one of forward's arguments."""
        return self.depends_on(node, {n.name for n in self.nodes if n.op == "placeholder"})

    def depends_on(self, node, names: set) -> bool:
        """Whether `node` reads the data of one of `names`, directly or through other nodes (a shape read, `h.size(1)`,
        reads none: the emitted forward takes it from the region's input, ForwardWriter.region_aliases)."""
        seen, todo = set(), [node]
        while todo:
            n = todo.pop()
            if n.name in names:
                return True
            if n.name not in seen and not is_metadata(n):
                seen.add(n.name)
                todo.extend(n.all_input_nodes)
        return False


def unmergeable(step: RegionStep, channels_last: bool) -> str:
    """Why a region that reads per-sample tensors does not run on its samples merged into channels ("" where it does):
    merged, a reduction across channels or over a flattened view would mix samples; and in a model whose inputs come
    channels-last (`channels_last`: as diffusion pipelines run) its 4-d or 5-d input would be read as an NCHW copy and
    its output written NCHW, where the NHWC kernels read and write them as they lie (the layout is kept: the
    per-sample tensor stays a step of its own)."""
    if channels_last and len(step.shape) in (4, 5):
        return "the model's inputs are channels-last, which the NHWC kernels read as they lie and merged samples could not"
    if step.reduce_kind in (ReduceKind.CHANNEL, ReduceKind.SAMPLE):
        return "the region ends in a reduction across channels, which merged samples would mix"
    if step.reduce_rank:
        return "the region's reduction reads it through a flattening view"
    return ""


def step_anchor(step) -> str:
    if isinstance(step, LibraryStep):
        return step.node.name
    if isinstance(step, RegionStep):
        return step.gn
    if isinstance(step, BatchNormStep):
        return step.bn
    return step.output   # after every input it reads (a member may come before another member's input)


def channels_last_inputs(nodes) -> bool:
    """Whether a 4-d or 5-d input of forward is laid out channels-last at the reference's shapes (get_inputs())."""
    return any(n.op == "placeholder" and getattr(n.meta.get("tensor_meta"), "memory_format", None) in
               (torch.channels_last, torch.channels_last_3d) for n in nodes)
