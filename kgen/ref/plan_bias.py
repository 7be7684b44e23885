"""Which conv / linear bias a region takes over (the planner's bias peel).

A conv or linear whose output only a region reads runs without its bias, and the region's prologue adds it on the
fly: one read and write of the whole output fewer (PyTorch adds a conv's bias after cuDNN's convolution, a broadcast
add of its own). The output may also be split along the channels first (`conv(x).chunk(2, dim=1)`, `.split(C, 1)`:
a gated unit's two halves, each normalised by a GroupNorm of its own); each piece's region then adds its slice of the
bias (`self.conv.bias[0:256]`), and the conv drops its bias only where every piece's region took its slice
(`settle_split_biases`, after every region is planned); otherwise each region gives its slice back.
"""
from __future__ import annotations

import math
import operator

import torch
import torch.nn as nn

from kgen.ref.graph import is_metadata, peelable
from kgen.ref.ir import BatchNormStep, Operand, Param, PwNode, RegionStep, rename_value, shift_params
from kgen.ref.trace import tensor_shape

SPLITS = {"chunk", "split"}                        # tensor methods that cut a tensor into pieces along a dim
SPLIT_FUNCTIONS = {torch.chunk: "chunk", torch.split: "split"}


class BiasPlanning:
    """A mixin of the Planner (plan.py): self.module, self.attr, self.bias_takers, self.split_bias_takers."""

    def peel_bias(self, x, region_values: set) -> tuple | None:
        """(the conv / linear node, its bias as a Param of the region, the words the functor's comment gives it)
        where the region that reads `x` may add the bias of the conv / linear that made x, or that made the tensor x
        is a channel piece of; else None. Only a plain call (`up(x, output_size=...)` keeps its arguments and its
        bias in PyTorch)."""
        if peelable(self.module(x)) and _read_only_by(x, region_values) and _plain(x) and \
                (not isinstance(self.module(x), nn.Linear) or len(tensor_shape(x) or []) == 2):
            return x, Param(expr=f"{self.attr(x.target)}.bias", shape=tuple(self.module(x).bias.shape),
                            label=f"{x.target}.bias"), f"{x.target} bias"
        piece = channel_piece(x)
        if piece is None:
            return None
        conv, lo, hi = piece
        module = self.module(conv)
        if not peelable(module) or isinstance(module, nn.Linear) or not _plain(conv) or \
                not _read_only_by(x, region_values) or (tensor_shape(x) or [0, 0])[1] != hi - lo:
            return None
        return conv, Param(expr=f"{self.attr(conv.target)}.bias[{lo}:{hi}]", shape=(hi - lo,),
                           label=f"{conv.target}.bias[{lo}:{hi}]"), f"{conv.target} bias[{lo}:{hi}]"

    def take_bias(self, peeled, step: RegionStep) -> None:
        """Records that `step` adds the bias of `peeled` (the node peel_bias gave) to its input."""
        if peeled.name == step.input:
            self.bias_takers.setdefault(peeled.name, step)
        else:
            self.split_bias_takers.setdefault(peeled, {})[step.input] = step

    def settle_split_biases(self) -> None:
        """Each conv whose pieces' regions took slices of its bias: it drops its bias where every piece is a region's
        input that took its slice, and the regions take their slices back otherwise."""
        for conv, takers in self.split_bias_takers.items():
            pieces = [u for split in conv.users for u in split.users]
            if len(conv.users) == 1 and pieces and all(p.name in takers for p in pieces):
                self.bias_takers[conv.name] = [takers[p.name] for p in pieces]
            else:
                for step in takers.values():
                    give_bias_back(step)


def channel_piece(x) -> tuple | None:
    """(the tensor x is cut from, the piece's first channel, one past its last) where x is `t.chunk(k, dim=1)[i]`
    or `t.split(s, dim=1)[i]` (s an int or a list of ints; the tensor methods or torch.chunk / torch.split), t's
    only reader that split; else None."""
    if x.op != "call_function" or x.target is not operator.getitem or not isinstance(x.args[1], int):
        return None
    split, index = x.args
    if not isinstance(split, torch.fx.Node):
        return None
    kind = split.target if split.op == "call_method" and split.target in SPLITS else \
        SPLIT_FUNCTIONS.get(split.target) if split.op == "call_function" else None
    if kind is None or len(split.args) < 2:
        return None
    source, size = split.args[0], split.args[1]
    dim = split.kwargs.get("dim", split.args[2] if len(split.args) > 2 else 0)
    shape = tensor_shape(source) if isinstance(source, torch.fx.Node) else None
    if shape is None or len(shape) < 3 or not isinstance(dim, int) or dim % len(shape) != 1 or \
            set(split.kwargs) - {"dim"} or len(source.users) != 1:
        return None
    channels = shape[1]
    if kind == "chunk":
        if not isinstance(size, int) or size < 1:
            return None
        sizes = _cut(channels, math.ceil(channels / size))
    elif isinstance(size, int) and size > 0:
        sizes = _cut(channels, size)
    elif isinstance(size, (list, tuple)) and all(isinstance(s, int) for s in size) and sum(size) == channels:
        sizes = list(size)
    else:
        return None
    if not 0 <= index < len(sizes):
        return None
    lo = sum(sizes[:index])
    return source, lo, lo + sizes[index]


def bias_taker_words(taker) -> str:
    """Who adds a library step's dropped bias, as --explain says it: a batch norm (a BatchNormStep), the regions of a
    split output (a list of RegionSteps, a slice each), or the next region (any other taker); "" for none."""
    if taker is None:
        return ""
    if isinstance(taker, list):
        return "regions " + " and ".join(str(s.index) for s in sorted(taker, key=lambda s: s.index)) + ", a slice each"
    return "the batch norm" if isinstance(taker, BatchNormStep) else "the next region"


def add_bias(prologue: list, epilogue: list, params: list, x, bias: Param, words: str) -> None:
    """The peel in a region being planned: `bias` becomes its parameter 0 and the prologue's first op x plus it,
    which the region's ops read in x's place (give_bias_back undoes it)."""
    params.insert(0, bias)
    shift_params(prologue + epilogue, 1)
    biased = PwNode(name=f"{x.name}_biased", op="add", operands=[Operand.of_value(x.name), Operand.of_param(0)],
                    consts={}, line=f"{words}, added by the region")
    rename_value(prologue + epilogue, x.name, biased.name)
    prologue.insert(0, biased)


def give_bias_back(step: RegionStep) -> None:
    """Undoes the planner's peel in `step`: its prologue's first op (x plus parameter 0, which nothing else reads) and
    its parameter 0 go, and its ops read x again."""
    first = step.prologue[0]
    step.prologue.pop(0)
    step.params.pop(0)
    shift_params(step.prologue + step.epilogue, -1)
    rename_value(step.prologue + step.epilogue, first.name, step.input)
    if step.result == first.name:
        step.result = step.input


def _cut(channels: int, size: int) -> list[int]:
    """The piece sizes of `channels` cut every `size` (the last piece the rest), as chunk and split cut."""
    return [min(size, channels - lo) for lo in range(0, channels, size)]


def _read_only_by(x, region_values: set) -> bool:
    return bool(x.users) and all(u.name in region_values or is_metadata(u) for u in x.users)


def _plain(node) -> bool:
    return len(node.args) == 1 and not node.kwargs
