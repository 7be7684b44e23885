"""`kgen emit --ref REFERENCE.py`: reference -> trace -> plan -> render (the rooms of kgen/ref/).

Errors are `RefError`s (one line, naming the op and its source line); nothing is rendered before the
whole plan stands, and the rendered text passes the same static rules as every emitted file.
"""
from __future__ import annotations

import json
import math
import operator
import os
from dataclasses import dataclass
from pathlib import Path

from kgen import __version__
from kgen.emit import TEMPLATES, environment, static_rule_violation
from kgen.header import render_header_fields
from kgen.ref.codegen import mode_solution_context
from kgen.ref.concrete import GUARD, GUARD_PART
from kgen.ref.graph import is_metadata, param_view_root
from kgen.ref.ir import BatchNormStep, ConvMode, LibraryStep, Plan, PointwiseStep, ReduceKind, RegionStep
from kgen.ref.plan import make_plan
from kgen.ref.plan_faithful import FAITHFUL_MODES
from kgen.ref.rewrite import assigned
from kgen.ref.tf32 import tf32_source
from kgen.ref.trace import Reference, RefError, load_reference
from kgen.specs.base import AUTOGRAD_MODES, DEFAULT_AUTOGRAD, FORWARDS, ONEPASS_BLOCKS_PER_SM, ONEPASS_THREADS

# The building blocks of an emitted --ref file, in order (kgen/templates/cuda/): every region, element-wise and batch
# norm kernel builds on the core, the GroupNorm arithmetic and the region families (the element-wise and batch norm
# kernels share their index helpers); the test harnesses of the two region kernel families build from the same lists.
REGION_BASE_PARTS = ("core/common.cuh", "core/sweeps.cuh", "groupnorm/statistics.cuh", "groupnorm/region.cuh",
                     "groupnorm/reducers.cuh")
RESIDENT_PARTS = ("groupnorm/resident/resident.cuh", "groupnorm/resident/forward.cuh", "groupnorm/rows/forward.cuh",
                  "groupnorm/resident/backward.cuh", "groupnorm/rows/backward.cuh", "groupnorm/resident/plan.cuh",
                  "groupnorm/resident/host.cuh")
TWOPASS_PARTS = ("groupnorm/twopass/twopass.cuh", "groupnorm/twopass/forward.cuh", "groupnorm/twopass/backward.cuh",
                 "groupnorm/twopass/window_backward.cuh", "groupnorm/twopass/backward_pipeline.cuh",
                 "groupnorm/cluster/cluster.cuh", "groupnorm/twopass/forward_host.cuh",
                 "groupnorm/twopass/backward_host.cuh")
CUDA_PARTS = REGION_BASE_PARTS + ("core/ops.cuh",) + RESIDENT_PARTS + TWOPASS_PARTS
# Only in a file whose plan uses them: native_group_norm's statistics (a faithful region), a region's one-pass forward
# (--forward one-pass), the layout copy (--conv fast), a region that reads a channels-last input as it lies (its NHWC
# kernels: a region without a reduction over 4-d or 5-d tensors, codegen.reads_channels_last),
# element-wise kernels, batch norms, kgen's conv.
# Which region kernels a call may take (ref/bindings.cu.j2): "auto", the rules of groupnorm/resident/plan.cuh
# (region_resident_pays); "resident", the resident (and rows) kernels wherever they fit; "two-pass", the two-pass
# kernels for every shape. kgen tune measures them against each other; the rules stay the default.
REGION_KERNELS = ("auto", "resident", "two-pass")
ONEPASS_PARTS = ("groupnorm/onepass/onepass.cuh", "groupnorm/onepass/host.cuh")
FAITHFUL_PARTS = ("groupnorm/statistics_torch.cuh",)   # native_group_norm's statistics, for faithful regions
LAYOUT_PARTS = ("core/layout.cuh",)   # the NCHW <-> channels-last copies
CHANNELS_LAST_PARTS = ("groupnorm/nhwc/nhwc.cuh", "groupnorm/nhwc/host.cuh")
MERGED_PARTS = ("groupnorm/merged.cuh",)   # regions reading tensors computed per sample, on samples merged into channels
POINTWISE_PARTS = ("pointwise/pointwise.cuh",)
BATCHNORM_PARTS = ("batchnorm/train.cuh", "batchnorm/backward.cuh", "batchnorm/host.cuh")
# A region fed by kgen's wgmma ConvTranspose2d (--conv fused): the conv and its gradients (with the layout copies,
# for the cuDNN gradients it falls back to), the region's channels-last backward.
CONV_FUSED_PARTS = ("conv/convt_common.cuh", "conv/convt_wgmma.cuh", "conv/convt_wgmma_produce.cuh",
                    "conv/convt_wgmma_consume.cuh", "conv/convt_wgmma_host.cuh",
                    "conv/convt_wgmma_infer.cuh", "conv/convt_wgrad.cuh", "groupnorm/convt/backward_channels_last.cuh",
                    "groupnorm/convt/host.cuh")


def cuda_parts(context: dict) -> tuple:
    """The CUDA building blocks a file carries: the base, and each optional family only where its plan uses it."""
    layout = LAYOUT_PARTS if context["channels_last"] or context["conv_fused"] else ()
    return (CUDA_PARTS + (FAITHFUL_PARTS if any(r["faithful"] for r in context["regions"]) else ()) +
            (ONEPASS_PARTS if any(r["onepass"] for r in context["regions"]) else ()) + layout +
            (CHANNELS_LAST_PARTS if context["nhwc"] else ()) +
            (MERGED_PARTS if any(r["merged"] for r in context["regions"]) else ()) +
            (CONV_FUSED_PARTS if context["conv_fused"] else ()) +
            (POINTWISE_PARTS if context["pointwise"] else ()) + (BATCHNORM_PARTS if context["batchnorms"] else ()))


def check_block_size(block_size: int) -> None:
    if block_size < 32 or block_size > 1024 or block_size & (block_size - 1):
        raise RefError(f"--block-size must be a power of two in [32, 1024], got {block_size}")


def _while(step: RegionStep) -> str:
    return f" while {' or '.join(step.faithful_switch)} TF32 is on" if step.faithful_switch else ""


def explain(plan: Plan) -> list[str]:
    """The plan, one line per step: which ops run in which kernel, which stay in PyTorch."""
    lines = []
    for step in plan.steps:
        if isinstance(step, RegionStep):
            from kgen.ref.codegen import describe_region
            params = ", ".join(step.gn_params + [p.label for p in step.params]) or "none"
            layout = " (channels-last input)" if step.channels_last else ""
            faithful = [] if not step.faithful else [f"PyTorch's GroupNorm to the bit ({step.faithful})"] \
                if step.faithful.startswith("--") else [f"PyTorch's GroupNorm to the bit{_while(step)}: {step.faithful} "
                                                         f"reads it in TF32"]
            notes = f" ({'; '.join(step.notes + faithful)})" if step.notes or faithful else ""
            lines.append(f"kgen region {step.index}{layout}: {describe_region(step)}{notes}  "
                         f"[{step.input} {step.shape} -> {step.output} {step.out_shape}; parameters: {params}]")
        elif isinstance(step, PointwiseStep):
            reads = ", ".join(f"{name} {list(shape)}" for name, shape in zip(step.inputs, step.input_shapes))
            broadcast = f"; broadcast: {', '.join(step.broadcast)}" if step.broadcast else ""
            params = ", ".join(p.label for p in step.params) or "none"
            lines.append(f"kgen element-wise {step.index}: {' -> '.join(n.op for n in step.nodes)}  "
                         f"[{reads} -> {step.output} {list(step.shape)}{broadcast}; parameters: {params}]")
        elif isinstance(step, BatchNormStep):
            from kgen.ref.codegen import describe_batchnorm
            params = ", ".join(_batchnorm_parameters(step, plan)) or "none"
            lines.append(f"kgen batch norm {step.index}: {describe_batchnorm(step)}  "
                         f"[{step.input} {step.shape} -> {step.output} {step.out_shape}; parameters: {params}]")
        elif isinstance(step, LibraryStep):
            node = step.node
            if node.meta.get(GUARD):
                lines.append(f"shape guard: {node.meta[GUARD]} (concrete.py)")
                continue
            if node.meta.get(GUARD_PART) or node.op in ("get_attr",) or is_metadata(node) or param_view_root(node) is not None or \
                    (node.target is operator.getitem and is_metadata(node.args[0])) or \
                    (node.op == "call_function" and getattr(node.target, "__name__", "") in ("getattr", "tensor")):
                continue
            what = node.target if node.op != "call_function" else getattr(node.target, "__name__", str(node.target))
            what = "item assignment (`y[index] = value`), out of place" if node.target is assigned else what
            if step.fused_into is not None:
                lines.append(f"kgen wgmma ConvTranspose2d: {what} (TF32), its epilogue folding region "
                             f"{step.fused_into}'s GroupNorm moments (--conv fused)")
                continue
            notes = (["channels-last"] if step.channels_last else []) + \
                ([f"bias taken by {step.bias_to}"] if step.drop_bias else [])
            tail = f" ({'; '.join(notes)})" if notes else ""
            if step.elementwise_fallback:
                tail = f" ({step.elementwise_fallback}: PyTorch)"
            lines.append(f"PyTorch: {what}{tail}")
    return lines


def explain_plans(plans: list) -> list[str]:
    """explain() of a file's plans: one plan's lines, or each mode's under a line naming it (mode_plans)."""
    if len(plans) == 1:
        return explain(plans[0])
    lines = []
    for plan in plans:
        lines.append(f"in {'training' if plan.ref.training else 'eval'} mode (the forward branches on self.training):")
        lines += ["  " + line for line in explain(plan)]
    return lines


def plan_notes(plans: list) -> list[str]:
    """The notes of a file's plans, each once."""
    return list(dict.fromkeys(note for plan in plans for note in plan.notes))


def _batchnorm_parameters(step: BatchNormStep, plan: Plan) -> list[str]:
    """What a batch norm step reads besides its input: the module's own weight and bias (affine), the peeled bias
    of the conv before it, the element-wise chain's parameters."""
    module = plan.ref.gm.get_submodule(step.bn_module)
    own = [f"{step.bn_module}.weight", f"{step.bn_module}.bias"] if module.affine else []
    peeled = [step.conv_bias_name] if step.conv_bias_name else []
    return own + peeled + [p.label for p in step.params]


@dataclass(frozen=True)
class PresetCall:
    """What a preset (kgen/specs/) adds to a plan of its bundled reference: its name and title for the header, the
    parameters it was emitted with (the header's kgen-params, the command line that re-emits it) and the arguments
    Model is built with (--groups)."""
    name: str
    title: str
    params: dict
    command: str
    init_args: list


def emit_reference(path: str, block_size: int = 256, display: str | None = None, conv: str = "exact",
                   output: str | Path | None = None, stage=None, forward: str = "two-pass",
                   preset: PresetCall | None = None, faithful: str = "auto",
                   autograd: str = DEFAULT_AUTOGRAD, region_kernels: str = "auto") -> tuple[str, list[str], list[str]]:
    """Returns (file text, notes, plan lines). Raises RefError. `display`: how the file's comments name its reference
    (default: `path` as given); `conv`: "exact" (every library op as the reference calls it), "fast" (2-D and
    3-D convolutions feeding a region run channels-last) or "fused" (a ConvTranspose2d feeding a region is kgen's
    wgmma conv), plan_layout.py; `forward`: "two-pass" or "one-pass" (a
    region without a reduction whose epilogue reads y alone runs groupnorm/onepass/onepass.cuh where a slice fits on
    chip, on sm_90 and newer; its backward is unchanged); `faithful`: "auto", "all" or "none", which regions are
    PyTorch's GroupNorm to the bit (plan_faithful.py); `autograd`: "cpp" (each region one C++ autograd node,
    ref/autograd.cpp.j2: less host time a call; the default) or "python" (each step a torch.autograd.Function in the
    file);
    `region_kernels`: one of REGION_KERNELS, which kernels a region may take; `output`: the file the text is for (None:
    stdout), which the header names the reference relative to (reference_fields); `stage`: called with each stage's
    description as it starts (kgen.announce); `preset`: the file is a preset's (kgen emit SPEC), planned from its
    bundled reference."""
    stage = stage or (lambda text: None)
    check_block_size(block_size)
    if forward not in FORWARDS:
        raise RefError(f"--forward must be one of {', '.join(FORWARDS)}, got {forward!r}")
    if faithful not in FAITHFUL_MODES:
        raise RefError(f"--faithful must be one of {', '.join(FAITHFUL_MODES)}, got {faithful!r}")
    if autograd not in AUTOGRAD_MODES:
        raise RefError(f"--autograd must be one of {', '.join(AUTOGRAD_MODES)}, got {autograd!r}")
    if region_kernels not in REGION_KERNELS:
        raise RefError(f"--region-kernels must be one of {', '.join(REGION_KERNELS)}, got {region_kernels!r}")
    stage(f"tracing {display or path}")
    ref = load_reference(path, init_args=preset.init_args if preset else None)
    for shape, value in zip(ref.input_shapes, ref.input_values):
        if shape is None and (type(value) not in (int, float, bool) or not math.isfinite(value)):
            raise RefError(f"{path}: get_inputs() returns {type(value).__name__} {value!r}: kgen plans tensors and "
                           "finite Python numbers among the inputs; pass anything else in get_init_inputs()")
    stage("planning")
    plans, context = _planned(ref, conv, faithful, autograd)
    region_steps = [s for plan in plans for s in plan.steps if isinstance(s, RegionStep)]
    for region, step in zip(context["regions"], region_steps):
        region["groups"] = _groups_of(ref, step)
        region["onepass"] = forward == "one-pass" and onepass_applies(step)
    stage("rendering")
    env = environment()
    params = {"block_size": block_size}
    options = f"--block-size {block_size}"
    if conv != "exact":
        params["conv"] = conv
        options += f" --conv {conv}"
    if forward != "two-pass":
        params["forward"] = forward
        options += f" --forward {forward}"
    if region_kernels != "auto":
        params["region_kernels"] = region_kernels
        options += f" --region-kernels {region_kernels}"
    if faithful != "auto":
        params["faithful"] = faithful
        options += f" --faithful {faithful}"
    if autograd != DEFAULT_AUTOGRAD:
        params["autograd"] = autograd
        options += f" --autograd {autograd}"
    shown = display or str(path)
    # a preset's header names its bundled reference where this machine has it (display names it in comments only)
    recorded, abspath = reference_fields(path, output, display if preset is None else None)
    spec_name, header_params, command = "ref", params, f"kgen emit --ref {shown} {options}"
    if preset is not None:
        spec_name, header_params, command = preset.name, preset.params, preset.command
    functions = ["to_channels_last", "to_contiguous_nchw"] if context["channels_last"] else []
    if any(not r["cpp"] for r in context["regions"]):
        functions += ["region_input"]
    for r in context["regions"]:
        backward = f"region{r['index']}_backward" + ("_summed" if r["merged"] else "")
        functions += [f"region{r['index']}"] if r["cpp"] else [f"region{r['index']}_forward", backward]
        if r["conv_fused"]:
            functions += [f"region{r['index']}_convt_{f}" for f in ("unsupported", "forward", "inference", "backward")]
    for p in context["pointwise"]:   # the node, or the Function's entry points (a signed sum has no backward kernel)
        functions += [f"pointwise{p['index']}"] if p["cpp"] else (
            [f"pointwise{p['index']}_forward"] + ([f"pointwise{p['index']}_backward"] if p["linear"] is None else []))
    for b in context["batchnorms"]:
        functions += [f"batchnorm{b['index']}_forward", f"batchnorm{b['index']}_backward"]
    parts = [(TEMPLATES / "cuda" / name).read_text() for name in cuda_parts(context)]
    parts.append(env.get_template("ref/bindings.cu.j2").render(
        block_size=block_size, region_kernels=region_kernels, onepass_threads=ONEPASS_THREADS, onepass_blocks_per_sm=ONEPASS_BLOCKS_PER_SM,
        **context))
    plan_lines = explain_plans(plans)
    notes = plan_notes(plans)
    text = env.get_template("ref/solution.py.j2").render(
        version=__version__, command=command, reference=shown, preset=preset,
        reference_name=Path(path).name, plan_lines=plan_lines,
        explain_options=(f" --conv {conv}" if conv != "exact" else "") +
        (f" --faithful {faithful}" if faithful != "auto" else ""),
        params_line=", ".join(f"{k}={v}" for k, v in header_params.items()),
        notes=notes,
        header_fields=render_header_fields(spec_name, header_params, __version__, reference=recorded,
                                           reference_sha256=ref.sha256, reference_abspath=abspath),
        cuda_source="\n".join(parts), functions=json.dumps(functions), tf32_source=tf32_source(), **context)
    _check_carried_code(text, path)
    return text, notes, plan_lines


def reference_fields(path, output, display: str | None) -> tuple[str, str | None]:
    """How the header names the reference, so that `kgen validate FILE` finds it from any working folder: relative
    to the folder of `output` (the pair can move together); for text going to stdout, whose file is not known, as
    given (`display`, else the path) and by its absolute path, except where `display` is given: the golden files
    must read the same on every machine. Returns (kgen-reference, kgen-reference-abspath or None)."""
    if output is not None:
        return os.path.relpath(Path(path).resolve(), Path(output).resolve().parent), None
    if display is not None:
        return display, None
    return str(path), str(Path(path).resolve())


def _check_carried_code(text: str, path) -> None:
    """The emitted file carries some of the reference's own code (what its Model and get_inputs read): a `try`,
    `except` or `pass` there would fail KernelBench's static checker, so it is the reference's one-line error
    rather than a file that checker rejects (the templates' own text never has one: tests/test_emit.py)."""
    violation = static_rule_violation(text)
    if violation is not None:
        raise RefError(f"{path}: the emitted file would carry `{violation[1]}` from the reference, and KernelBench's "
                       "static checker rejects try / except / pass anywhere in a solution: write the reference "
                       "without it")


def _planned(ref, conv: str, faithful: str = "auto", autograd: str = DEFAULT_AUTOGRAD):
    """The plans (mode_plans) and the file's template context. A failure that is not a RefError is kgen's own bug: it
    still ends as one line naming the reference (and exit 2 at the command line), never a traceback or a file."""
    try:
        plans = mode_plans(ref, conv, faithful)
        return plans, mode_solution_context(plans, autograd)
    except RefError:
        raise
    except Exception as error:  # noqa: BLE001 (turned into the one-line error users get)
        first = (str(error).strip().splitlines() or [""])[0]
        raise RefError(f"{ref.path}: kgen could not plan this reference (an internal error, please report it): "
                       f"{type(error).__name__}: {first}") from error


def mode_plans(ref: Reference, conv: ConvMode | str = ConvMode.EXACT, faithful: str = "auto") -> list:
    """The plans of one file: the reference's, or, for a forward that branches on self.training (modes.py), the
    plan of each mode's graph, the first mode's first, the second's steps numbered after it."""
    plans = [make_plan(ref, conv, faithful)]
    if ref.other_mode is not None:
        counts = tuple(sum(isinstance(s, kind) for s in plans[0].steps)
                       for kind in (RegionStep, PointwiseStep, BatchNormStep))
        plans.append(make_plan(ref.other_mode, conv, faithful, first=counts))
    return plans


def onepass_applies(step: RegionStep) -> bool:
    """Whether a region can take the one-pass forward: no reduction after it, its input channels-first (the
    kernel's bulk copies read each slice as one contiguous run). Its epilogue must read y alone, which the kernel
    checks at compile time (DirectGrads): an epilogue with a residual keeps the two-pass forward."""
    return step.reduce_kind is ReduceKind.NONE and not step.channels_last


def _groups_of(ref, step: RegionStep) -> int:
    """The region's group count as the kernels' template argument (0: read at run time, as a merged region's N * groups
    is)."""
    if step.merged:
        return 0
    if step.gn_module is not None:
        return int(dict(ref.gm.named_modules())[step.gn_module].num_groups)
    groups = step.gn_args.get("groups_value", step.gn_args["groups"])
    return int(groups) if str(groups).isdigit() else 0
