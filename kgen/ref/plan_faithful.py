"""Which regions reproduce PyTorch's GroupNorm forward bit for bit (a pass over a finished Plan).

cuDNN rounds a float32 convolution's inputs to TF32 by default (torch.backends.cudnn.allow_tf32), and a matmul does
where torch.backends.cuda.matmul.allow_tf32 is on (torch.set_float32_matmul_precision("high")). A value one ulp
away from the reference's then falls on the other side of a TF32 rounding now and then, and the op's output moves
by ~1e-3 of a term: a correctly rounded GroupNorm before a convolution fails KernelBench's float32 check (atol = rtol
= 1e-4), as torch.compile's does (H200: benchmarks/results/h200/faithful/README.md). So a region whose output
reaches such an op through any chain of steps is marked faithful: its forward takes native_group_norm's statistics
and formula (groupnorm/statistics_torch.cuh, Channel::value) and its element-wise ops are PyTorch's to the bit
(core/ops.cuh), and the op reads the reference's values. Everywhere else the region keeps kgen's own statistics
(a (hi, lo) mean in double, the fastest kernel family for the shape).

A region is faithful only at calls where one of the ops that read it rounds to TF32 (every TF32 op its output
reaches, through any chain): `faithful_switch` names their kinds, "conv" (cuDNN: on by default) and "matmul" (Linear,
matmul, einsum...: off by default), and the emitted file reads those settings at each call (`_tf32`). An attention
reading it, or `--faithful all`, makes it faithful at every call.

`kgen emit --ref --faithful`: auto (the above), all (every region, so that a model ending in a region gives the
reference's output bit for bit too) or none (kgen's own statistics and kernel choice everywhere: the fastest file,
correct within float32 rounding, which KernelBench's float32 check can fail after a TF32 op).
"""
from __future__ import annotations

import operator

import torch
import torch.nn as nn
import torch.nn.functional as F

from kgen.ref.errors import RefError
from kgen.ref.ir import LibraryStep, Operand, Plan, RegionStep
from kgen.ref.plan_bias import give_bias_back

# The ops that round float32 inputs to TF32, by the setting that rules it, read at each call: cuDNN's
# (torch.backends.cudnn) and cuBLAS's (torch.backends.cuda.matmul); an attention (its kernels' own choice) by neither,
# so a region one reads is faithful at every call.
CONV_MODULES = (nn.Conv1d, nn.Conv2d, nn.Conv3d, nn.ConvTranspose1d, nn.ConvTranspose2d, nn.ConvTranspose3d)
CONV_FUNCTIONS = {F.conv1d, F.conv2d, F.conv3d, F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d,
                  torch.conv1d, torch.conv2d, torch.conv3d}
MATMUL_MODULES = (nn.Linear, nn.Bilinear)
MATMUL_FUNCTIONS = {F.linear, F.bilinear, torch.matmul, torch.mm, torch.bmm, torch.addmm, torch.baddbmm, torch.einsum,
                    torch.tensordot, operator.matmul}
TF32_MODULES = CONV_MODULES + MATMUL_MODULES + (nn.MultiheadAttention,)
TF32_FUNCTIONS = CONV_FUNCTIONS | MATMUL_FUNCTIONS | {F.scaled_dot_product_attention}
TF32_METHODS = {"matmul", "mm", "bmm", "__matmul__", "addmm", "baddbmm"}   # all cuBLAS's
# The words `--faithful` takes (kgen/cli.py).
FAITHFUL_MODES = ("auto", "all", "none")


def mark_faithful(plan: Plan, mode: str = "auto") -> Plan:
    """Sets each region's `faithful` to why its forward is PyTorch's to the bit (the first TF32 op its output reaches,
    as --explain names it; under "all", the option itself), or "" where it is not, and `faithful_switch` to the
    kinds of op whose TF32 setting decides it at each call (auto, where no attention reads it)."""
    if mode not in FAITHFUL_MODES:
        raise ValueError(f"--faithful takes {', '.join(FAITHFUL_MODES)}, not {mode!r}")
    if mode == "none":
        return plan
    modules = dict(plan.ref.gm.named_modules())
    nodes = {node.name: node for node in plan.ref.gm.graph.nodes}
    for step in plan.steps:
        if not isinstance(step, RegionStep):
            continue
        readers = _tf32_readers(nodes[step.output], modules) if step.output in nodes else []
        step.faithful = readers[0][0] if readers else ("--faithful all" if mode == "all" else "")
        kinds = {kind for _, kind in readers}
        if readers and mode == "auto" and "attention" not in kinds:
            step.faithful_switch = tuple(sorted(kinds))
        if step.faithful:
            _keep_linear_bias(plan, step, modules)
    return plan


def _keep_linear_bias(plan: Plan, step: RegionStep, modules: dict) -> None:
    """A faithful region reads its input as the reference holds it, so the bias of the Linear before it stays in the
    library call (cuBLAS adds it inside the GEMM, one rounding; the region adding it after would round twice): the
    region's prologue no longer adds it, nor takes it as a parameter. (It added zeros in its place: a zeros_like and
    its parameter's gradient each call, for nothing.) A conv's bias stays the region's: cuDNN adds it after the conv
    too, the same two roundings."""
    taker = next((s for s in plan.steps if isinstance(s, LibraryStep) and s.drop_bias
                  and s.node.name == step.input), None)
    if taker is None or taker.node.op != "call_module" or not isinstance(modules.get(taker.node.target), nn.Linear):
        return
    first = step.prologue[0] if step.prologue else None
    # the planner's peeled bias (plan.py): the prologue's first op, x plus parameter 0, which nothing else reads
    if (first is None or first.name != f"{step.input}_biased" or first.op != "add"
            or first.operands != [Operand.of_value(step.input), Operand.of_param(0)]
            or any(o == Operand.of_param(0) for n in step.prologue[1:] + step.epilogue for o in n.operands)):
        raise RefError(f"kgen: region {step.index} takes {taker.node.target}'s bias in a form it cannot give back to "
                       f"the Linear (please report)")
    taker.drop_bias, taker.bias_to = False, ""
    give_bias_back(step)


def _tf32_readers(start, modules: dict) -> list[tuple[str, str]]:
    """Every op reachable from `start`'s users (breadth first, through the TF32 ops too: a matmul's output may feed a
    convolution) that rounds float32 inputs to TF32: (described, its kind: "conv", "matmul" or "attention")."""
    seen, frontier, readers = {start}, list(start.users), []
    while frontier:
        node = frontier.pop(0)
        if node in seen:
            continue
        seen.add(node)
        described = _tf32_op(node, modules)
        if described:
            readers.append((described, _kind(node, modules)))
        frontier.extend(node.users)
    return readers


def _kind(node, modules: dict) -> str:
    """A TF32 op's kind: which setting rules its rounding."""
    if node.op == "call_module":
        module = modules.get(node.target)
        return "conv" if isinstance(module, CONV_MODULES) else "matmul" if isinstance(module, MATMUL_MODULES) \
            else "attention"
    if node.op == "call_function":
        return "conv" if node.target in CONV_FUNCTIONS else "matmul" if node.target in MATMUL_FUNCTIONS \
            else "attention"
    return "matmul"   # the TF32 methods: matmul, mm, bmm, addmm, baddbmm


def _tf32_op(node, modules: dict) -> str:
    if node.op == "call_module":
        module = modules.get(node.target)
        return f"self.{node.target} ({type(module).__name__})" if isinstance(module, TF32_MODULES) else ""
    if node.op == "call_function" and node.target in TF32_FUNCTIONS:
        return f"{getattr(node.target, '__name__', str(node.target))}"
    if node.op == "call_method" and node.target in TF32_METHODS:
        return f".{node.target}()"
    return ""
