"""`--conv fast` for `kgen emit --ref`: which 2-D and 3-D convolutions run channels-last (a pass over a finished
Plan).

cuDNN's fastest kernels for many 2-D and 3-D convolutions (transposed ones above all) are channels-last. Fed an
NCHW tensor, PyTorch transposes the input to NHWC, runs them, and transposes the output back: two full-size copies
around every such convolution. With --conv fast, a convolution whose output a GroupNorm region reads gets a
channels-last input (kgen's tiled transpose, core/layout.cuh, whose backward brings the input gradient back to
NCHW) and keeps its channels-last output, which the region reads as it is (groupnorm/nhwc/nhwc.cuh) while it writes
its own output NCHW: the output-side copy disappears, forward and backward. The convolution's arithmetic is
cuDNN's either way; which algorithm cuDNN picks for the layout can differ, so the conv output may differ from
the reference's in TF32 rounding (kgen validate arbitrates against float64).

A region takes its input channels-last when that input is the output of an nn.Conv2d, nn.ConvTranspose2d,
nn.Conv3d or nn.ConvTranspose3d (channels_last_3d memory, NDHWC) and the region ends without a reduction (its channels-last kernels write the full tensor); any other region of
the plan stays NCHW, and the plan's notes say why.

With --conv fused, an nn.ConvTranspose2d whose output only a region without a reduction reads runs as kgen's own
(conv/convt_wgmma.cuh, Hopper's wgmma tensor cores, TF32): its epilogue folds the GroupNorm moments of the region's
prologue values, so the region's forward reads the conv output once, and its backward writes the conv output's
gradient channels-last for kgen's wgmma input and weight gradients (groupnorm/convt/host.cuh). At run time the file
runs the reference's conv and the region where the kernel does not take the call (another GPU, a stride, dilation,
output padding or conv groups it does not take, torch.backends.cudnn.allow_tf32 off).
"""
from __future__ import annotations

import torch.nn as nn

from kgen.ref.graph import is_metadata
from kgen.ref.ir import ConvMode, LibraryStep, Plan, ReduceKind, RegionStep

# The words `--conv` takes on the command line (kgen/cli.py), one per ConvMode.
CONV_MODES = tuple(mode.value for mode in ConvMode)
CHANNELS_LAST_CONVS = (nn.Conv2d, nn.ConvTranspose2d, nn.Conv3d, nn.ConvTranspose3d)


def apply_conv_mode(plan: Plan, conv: ConvMode | str) -> Plan:
    """Marks the regions (and the convolutions before them) that run channels-last under `conv` (a ConvMode, or the
    command line's word for one)."""
    plan.conv = ConvMode.of(conv)
    if plan.conv is ConvMode.EXACT:
        return plan
    if plan.conv is ConvMode.FUSED:
        return fuse_transposed_convs(plan)
    library = {s.node.name: s for s in plan.steps if isinstance(s, LibraryStep)}
    modules = dict(plan.ref.gm.named_modules())
    for step in plan.steps:
        if not isinstance(step, RegionStep):
            continue
        conv_step = library.get(step.input)
        module = _conv_module(conv_step, modules)
        if module is None:
            continue  # a GEMM or an input before the region is not worth a note
        reason = _why_not_channels_last(step, module)
        if reason:
            plan.notes.append(f"--conv fast: region {step.index} reads its input in NCHW: {reason}")
            continue
        step.channels_last = True
        conv_step.channels_last = True
    if not any(isinstance(s, RegionStep) and s.channels_last for s in plan.steps):
        plan.notes.append("--conv fast: no region reads a 2-D or 3-D convolution's output, so nothing runs channels-last "
                          "(the file is the one --conv exact gives)")
    else:
        plan.notes.append("--conv fast: cuDNN picks its algorithm per layout, and with PyTorch's default TF32 a "
                          "channels-last convolution can run in TF32 where the reference's NCHW one runs in float32 "
                          "(L2-21 on the H100: 1.6e-3 apart, outside KernelBench's 1e-4); `kgen validate --no-tf32` "
                          "compares with TF32 off")
    return plan


_OTHER_CONVS = (nn.Conv1d, nn.ConvTranspose1d)


def _conv_module(conv_step: LibraryStep | None, modules: dict):
    """The convolution module (of any rank) a library step calls, or None."""
    module = modules.get(conv_step.node.target) if conv_step is not None and conv_step.node.op == "call_module" \
        else None
    return module if isinstance(module, CHANNELS_LAST_CONVS + _OTHER_CONVS) else None


def _why_not_channels_last(step: RegionStep, module) -> str:
    """Why a region that reads the output of the convolution `module` stays NCHW, or "" where it runs
    channels-last."""
    if isinstance(module, _OTHER_CONVS):
        return f"`{step.input}` comes from an nn.{type(module).__name__}; --conv fast takes 2-D and 3-D convolutions only"
    if len(step.shape) not in (4, 5):
        return f"its input has rank {len(step.shape)}, not (N, C, H, W) or (N, C, D, H, W)"
    if step.reduce_kind is not ReduceKind.NONE:
        return "it ends in a reduction (the channels-last kernels write the full-size output only)"
    if step.merged:
        return "it reads a tensor computed per sample, and runs on its samples merged into channels (NCHW)"
    return ""


FUSED_NOTE = ("--conv fused: kgen's ConvTranspose2d runs on Hopper's warpgroup tensor cores (sm_90a: H100/H200) in TF32, "
              "as cuDNN's default does (operands rounded to nearest, float32 accumulation); where cuDNN picks a float32 "
              "algorithm (small shapes) the two differ by ~1e-3, and parameter gradients, sums over the batch, by up to "
              "~2%: compare at 1e-2. Without TF32 (torch.backends.cudnn.allow_tf32 off, kgen validate --no-tf32), on "
              "another GPU, or at a stride, dilation, output padding or conv groups the kernel does not take, the file "
              "runs the reference's conv and the region's kernels")


def fuse_transposed_convs(plan: Plan) -> Plan:
    """--conv fused: marks each region fed by an nn.ConvTranspose2d that kgen's wgmma conv can run (and that conv's
    step); a note says why any other transposed convolution before a region stays the library's."""
    library = {s.node.name: s for s in plan.steps if isinstance(s, LibraryStep)}
    modules = dict(plan.ref.gm.named_modules())
    fused = 0
    for step in plan.steps:
        if not isinstance(step, RegionStep):
            continue
        conv_step = library.get(step.input)
        module = _conv_module(conv_step, modules)
        if not isinstance(module, (nn.ConvTranspose1d, nn.ConvTranspose2d, nn.ConvTranspose3d)):
            continue
        reason = _why_not_fused(step, conv_step, module)
        if reason:
            plan.notes.append(f"--conv fused: region {step.index} reads the library's {conv_step.node.target}: {reason}")
            continue
        step.conv_fused = str(conv_step.node.target)
        step.conv_input = conv_step.node.args[0].name
        conv_step.fused_into = step.index
        fused += 1
    if not fused:
        plan.notes.append("--conv fused: no region reads an nn.ConvTranspose2d's output alone, so every convolution "
                          "stays the library's (the file is the one --conv exact gives)")
    else:
        plan.notes.append(FUSED_NOTE)
    return plan


def _why_not_fused(step: RegionStep, conv_step: LibraryStep, module) -> str:
    """Why kgen's wgmma conv does not run the transposed convolution `module` that region `step` reads, or ""."""
    node = conv_step.node
    if not isinstance(module, nn.ConvTranspose2d):
        return f"it is an nn.{type(module).__name__}; kgen's conv is a ConvTranspose2d"
    if len(node.args) != 1 or node.kwargs:
        return "it is called with more than its input (output_size...)"
    if step.reduce_kind is not ReduceKind.NONE:
        return "the region ends in a reduction (the fused backward takes full-size outputs only)"
    if step.merged:
        return "the region reads a tensor computed per sample (it runs on its samples merged into channels)"
    if module.bias is not None and not conv_step.drop_bias:
        return "its bias cannot move into the region (its output is read elsewhere, or the region has no slot left)"
    region_values = {n.name for n in step.prologue + step.epilogue} | {step.gn}
    if any(u.op == "output" or (u.name not in region_values and not is_metadata(u)) for u in node.users):
        return "its output is read outside the region"
    return ""
