"""The child process of `kgen validate`: everything that runs the solution.

    python -m kgen.validate.runner CONFIG.json

It imports the reference and the solution (which builds the solution's kernels), then runs the runtime
checks in stages: parameters (same RNG draws, strict state_dict round trip), forward trials on fresh
inputs (allclose, layout, inputs untouched, no aliasing, determinism), backward trials (input and
parameter gradients; a gradient that misses the reference is arbitrated by the whole-batch
float64 gradient, since the reference's own float32 sum can be the inaccurate one), a float64 cross-check on a slice of the batch, and optionally the benchmark.

Results go to the JSON file named in the config, rewritten after every check, so a crash or a hang
leaves what was found before it. An exception raised while the solution runs (a build error, an import
error, a CUDA error) ends the run: it is recorded as the file being broken, with its traceback's tail.
The parent (kgen.validate.runtime) turns this file into the report and the exit code.

This module may use try/except; only solution files are forbidden from using it.
"""
from __future__ import annotations

import gc
import importlib.machinery
import importlib.util
import json
import os
import platform
import re
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import torch

from kgen.validate.checks import Check, failed, note, passed, skipped
from kgen.validate.numerics import bitwise_equal, compare, shares_memory, tensor_meta

INPUT_KINDS = ("rand", "3+2*randn")   # the reference's distribution, then a shifted and scaled one
TAIL_LINES = 40
FP64_MAX_SAMPLES = 2


class StageError(Exception):
    """A problem that ends the run, with the kind the report shows (e.g. "usage")."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


# ---- results file --------------------------------------------------------------------------------------

class Results:
    """The result JSON, rewritten atomically after every change; progress lines go to stdout."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.data = {"status": "running", "stage": None, "checks": [], "info": {}, "bench": None, "error": None}
        self.flush()

    def stage(self, name: str) -> None:
        self.data["stage"] = name
        print(f"[kgen-runner] stage: {name}", flush=True)
        self.flush()

    def add(self, check: Check) -> None:
        self.data["checks"].append(check.to_dict())
        print(f"[kgen-runner] {check.verdict} {check.name}: {check.detail}", flush=True)
        self.flush()

    def info(self, **values) -> None:
        self.data["info"].update(values)
        self.flush()

    def error(self, kind: str, summary: str, message: str) -> None:
        self.data["error"] = {"kind": kind, "stage": self.data["stage"], "summary": summary, "message": message}
        self.flush()

    def done(self) -> None:
        self.data["status"] = "done"
        self.flush()

    def flush(self) -> None:
        temp = self.path.with_name(self.path.name + ".tmp")
        temp.write_text(json.dumps(self.data, indent=1, default=repr))
        os.replace(temp, self.path)


# ---- inputs --------------------------------------------------------------------------------------------

@dataclass
class InputSpec:
    """One positional input of forward: a tensor's shape and dtype, or a value passed as it is."""

    shape: tuple | None
    dtype: torch.dtype | None = None
    value: object = None

    @property
    def is_tensor(self) -> bool:
        return self.shape is not None

    def describe(self):
        if not self.is_tensor:
            return repr(self.value)
        return list(self.shape)


def describe_inputs(get_inputs: Callable) -> list[InputSpec]:
    """The shapes and dtypes get_inputs() returns, found on the meta device (no 7.5 GB allocation)."""
    try:
        with torch.device("meta"):
            sample = list(get_inputs())
    except Exception:
        sample = list(get_inputs())
    return [InputSpec(tuple(x.shape), x.dtype) if isinstance(x, torch.Tensor) else InputSpec(None, value=x)
            for x in sample]


def with_shapes(specs: list[InputSpec], shapes: list[list[int]]) -> list[InputSpec]:
    tensors = [s for s in specs if s.is_tensor]
    if len(shapes) != len(tensors):
        raise StageError("usage", f"{len(shapes)} input shapes given, the reference's get_inputs() returns "
                                  f"{len(tensors)} tensors")
    it = iter(shapes)
    return [InputSpec(tuple(next(it)), s.dtype) if s.is_tensor else s for s in specs]


def sliced(specs: list[InputSpec], batch: int, k: int) -> list[InputSpec]:
    """The same inputs with every tensor whose leading dimension is the batch cut to k samples."""
    return [InputSpec((k,) + s.shape[1:], s.dtype) if s.is_tensor and s.shape and s.shape[0] == batch else s
            for s in specs]


def make_inputs(specs: list[InputSpec], kind: str, seed: int, device: torch.device,
                materialize: Callable[[], list] | None = None) -> list:
    """Fresh inputs: floating tensors drawn with `kind`; other tensors taken from the reference's
    get_inputs() (called under the same seed); non-tensors passed as they are."""
    generator = torch.Generator(device=device)
    generator.manual_seed(seed)
    real = None
    inputs = []
    for i, spec in enumerate(specs):
        if not spec.is_tensor:
            inputs.append(spec.value)
        elif spec.dtype.is_floating_point:
            inputs.append(draw(spec.shape, spec.dtype, kind, generator, device))
        else:
            if real is None:
                torch.manual_seed(seed)
                real = list(materialize())
            inputs.append(real[i].to(device))
    return inputs


def draw(shape, dtype, kind: str, generator, device) -> torch.Tensor:
    if kind == "rand":
        return torch.rand(shape, generator=generator, device=device, dtype=dtype)
    t = torch.randn(shape, generator=generator, device=device, dtype=dtype)
    return t.mul_(2).add_(3)


def outputs_of(out) -> list:
    return list(out) if isinstance(out, (tuple, list)) else [out]


def tensors_of(values) -> list[torch.Tensor]:
    return [v for v in values if isinstance(v, torch.Tensor)]


# ---- context shared by the stages ----------------------------------------------------------------------

@dataclass
class Context:
    config: dict
    results: Results
    device: torch.device
    atol: float
    rtol: float
    seed: int
    ref_mod: object = None
    new_mod: object = None
    init: list = field(default_factory=list)
    specs: list = field(default_factory=list)
    ref_model: object = None
    new_model: object = None
    layout_ok: dict = field(default_factory=dict)   # trial -> whether outputs could be compared

    def sync(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def free(self) -> None:
        """Give freed device memory back between stages (L1-35's tensors are 7.5 GB each)."""
        if self.device.type == "cuda":
            gc.collect()
            torch.cuda.empty_cache()

    def add(self, check: Check) -> None:
        self.results.add(check)

    def inputs(self, kind: str, seed: int, specs: list | None = None) -> list:
        return make_inputs(self.specs if specs is None else specs, kind, seed, self.device,
                           materialize=self.ref_mod.get_inputs)

    def run(self, model, inputs) -> list:
        """Call a model and wait for the device, so an asynchronous CUDA error surfaces here."""
        out = outputs_of(model(*inputs))
        self.sync()
        return out


def import_file(path: str | Path, name: str):
    """Import a Python file as a module, whatever its suffix (test data is stored as .py.txt)."""
    loader = importlib.machinery.SourceFileLoader(name, str(path))
    spec = importlib.util.spec_from_file_location(name, str(path), loader=loader)
    if spec is None or spec.loader is None:
        raise StageError("import", f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


# ---- stages --------------------------------------------------------------------------------------------

def stage_environment(ctx: Context) -> None:
    info = {"torch_version": torch.__version__, "cuda_version": torch.version.cuda, "python": platform.python_version(),
            "device": str(ctx.device), "gpu": None}
    if ctx.device.type == "cuda":
        if not torch.cuda.is_available():
            raise StageError("no-cuda", "no CUDA device in the child process")
        props = torch.cuda.get_device_properties(ctx.device)
        info.update(gpu=props.name, capability=f"{props.major}.{props.minor}",
                    gpu_memory_gib=round(props.total_memory / 2**30, 1),
                    cudnn_allow_tf32=torch.backends.cudnn.allow_tf32,
                    matmul_allow_tf32=torch.backends.cuda.matmul.allow_tf32)
    ctx.results.info(**info)


def stage_import_reference(ctx: Context) -> None:
    ctx.ref_mod = import_file(ctx.config["reference"], "kgen_validate_reference")


def stage_import_solution(ctx: Context) -> None:
    started = time.monotonic()
    ctx.new_mod = import_file(ctx.config["solution"], "kgen_validate_solution")
    seconds = time.monotonic() - started
    ctx.add(passed("build + import", f"{seconds:.1f} s", seconds=seconds))


def _same(a, b) -> bool:
    try:
        return bool(a == b)
    except Exception:
        return repr(a) == repr(b)


def stage_arguments(ctx: Context) -> None:
    ref_init = list(ctx.ref_mod.get_init_inputs())
    new_init = list(ctx.new_mod.get_init_inputs())
    given = ctx.config.get("init_args")
    if given is not None:
        ctx.init = list(given)
        ctx.add(note("init args", f"{ctx.init!r} (given)", init_args=ctx.init))
    elif not _same(new_init, ref_init):
        ctx.init = new_init
        ctx.add(note("init args", f"solution's get_init_inputs() {new_init!r} differs from the reference's "
                                  f"{ref_init!r}: using the solution's", solution=new_init, reference=ref_init))
    else:
        ctx.init = ref_init
        ctx.add(note("init args", f"{ref_init!r} (reference's get_init_inputs())", init_args=ref_init))

    ref_specs = describe_inputs(ctx.ref_mod.get_inputs)
    shapes = ctx.config.get("input_shapes")
    ctx.specs = with_shapes(ref_specs, shapes) if shapes else ref_specs
    described = [s.describe() for s in ctx.specs]
    if shapes:
        ctx.add(note("input shapes", f"{described} (given)"))
    else:
        new_described = [s.describe() for s in describe_inputs(ctx.new_mod.get_inputs)]
        detail = f"{described} (reference's get_inputs())"
        if new_described != described:
            detail += f"; the solution's get_inputs() gives {new_described}"
        ctx.add(note("input shapes", detail))
    ctx.results.info(init_args=ctx.init, input_shapes=described)


def _construct(ctx: Context, cls, seed: int):
    torch.manual_seed(seed)
    return cls(*ctx.init).to(ctx.device)


def stage_parameters(ctx: Context) -> None:
    ctx.ref_model = _construct(ctx, ctx.ref_mod.Model, ctx.seed)
    ctx.new_model = _construct(ctx, ctx.new_mod.ModelNew, ctx.seed)
    ref_sd, new_sd = ctx.ref_model.state_dict(), ctx.new_model.state_dict()
    ctx.add(check_state_layout(ref_sd, new_sd))
    ctx.add(check_state_values(ref_sd, new_sd))
    probe = _construct(ctx, ctx.new_mod.ModelNew, ctx.seed + 1)
    ctx.add(check_load_state_dict(probe, ref_sd))
    del probe


def check_state_layout(ref_sd: dict, new_sd: dict) -> Check:
    name = "state_dict keys and shapes"
    only_ref = [k for k in ref_sd if k not in new_sd]
    only_new = [k for k in new_sd if k not in ref_sd]
    problems = []
    if only_ref:
        problems.append(f"missing {only_ref}")
    if only_new:
        problems.append(f"unexpected {only_new}")
    for key in ref_sd:
        if key in new_sd and (ref_sd[key].shape != new_sd[key].shape or ref_sd[key].dtype != new_sd[key].dtype):
            problems.append(f"{key}: {tuple(new_sd[key].shape)} {new_sd[key].dtype} vs reference "
                            f"{tuple(ref_sd[key].shape)} {ref_sd[key].dtype}")
    if problems:
        return failed(name, "; ".join(problems), missing=only_ref, unexpected=only_new)
    order = "" if list(ref_sd) == list(new_sd) else " (different order)"
    return passed(name, f"{len(ref_sd)} entries{order}", keys=list(ref_sd))


def check_state_values(ref_sd: dict, new_sd: dict) -> Check:
    name = "state_dict values (same RNG draws)"
    common = [k for k in ref_sd if k in new_sd and ref_sd[k].shape == new_sd[k].shape
              and ref_sd[k].dtype == new_sd[k].dtype]
    differ = [k for k in common if not bitwise_equal(ref_sd[k], new_sd[k])]
    if differ:
        return failed(name, f"differ after the same torch.manual_seed: {differ}", differ=differ)
    if not common:
        return passed(name, "no parameters or buffers")
    return passed(name, f"{len(common)} tensors bitwise equal")


def check_load_state_dict(model, ref_sd: dict) -> Check:
    name = "load_state_dict(Model().state_dict(), strict=True)"
    try:
        model.load_state_dict(ref_sd, strict=True)
    except Exception as error:
        return failed(name, str(error).strip().splitlines()[0] if str(error).strip() else repr(error))
    return passed(name)


def trial_kind(trial: int) -> str:
    return INPUT_KINDS[trial % len(INPUT_KINDS)]


def trial_seed(ctx: Context, trial: int) -> int:
    return ctx.seed + 1000 * (trial + 1)


def trial_label(trial: int) -> str:
    return f"trial {trial + 1} ({trial_kind(trial)})"


def stage_forward(ctx: Context, trial: int) -> None:
    label = trial_label(trial)
    inputs = ctx.inputs(trial_kind(trial), trial_seed(ctx, trial))
    kept = [x.clone() for x in tensors_of(inputs)]
    with torch.no_grad():
        ref_outs = ctx.run(ctx.ref_model, inputs)
        new_outs = ctx.run(ctx.new_model, inputs)
        ctx.add(check_inputs_untouched(label, tensors_of(inputs), kept))
        del kept
        ctx.add(check_no_alias(label, new_outs, tensors_of(inputs)))
        layout = check_layout(label, new_outs, ref_outs)
        ctx.add(layout)
        ctx.layout_ok[trial] = layout.ok
        ctx.add(check_contiguous(label, new_outs))
        if layout.ok:
            for i, (new, ref) in enumerate(zip(new_outs, ref_outs)):
                if isinstance(ref, torch.Tensor):
                    suffix = f" output[{i}]" if len(ref_outs) > 1 else ""
                    ctx.add(check_close(f"{label} forward{suffix}", new, ref, ctx.atol, ctx.rtol))
        else:
            ctx.add(skipped(f"{label} forward", "outputs not comparable (see layout)"))
        del ref_outs
        ctx.free()
        again = ctx.run(ctx.new_model, inputs)
        ctx.add(check_deterministic(label, new_outs, again))


def check_inputs_untouched(label: str, inputs: list, kept: list) -> Check:
    name = f"{label} inputs untouched"
    changed = [i for i, (x, k) in enumerate(zip(inputs, kept)) if not bitwise_equal(x, k)]
    if changed:
        return failed(name, f"forward wrote into input(s) {changed}", changed=changed)
    return passed(name)


def check_no_alias(label: str, outs: list, inputs: list) -> Check:
    name = f"{label} output does not alias an input"
    pairs = [(o, i) for o, out in enumerate(outs) if isinstance(out, torch.Tensor)
             for i, x in enumerate(inputs) if shares_memory(out, x)]
    if pairs:
        return failed(name, f"output/input memory overlaps: {pairs}", pairs=pairs)
    return passed(name)


def check_layout(label: str, new_outs: list, ref_outs: list) -> Check:
    name = f"{label} output shape/dtype/device"
    if len(new_outs) != len(ref_outs):
        return failed(name, f"{len(new_outs)} outputs, reference returns {len(ref_outs)}")
    problems = []
    for i, (new, ref) in enumerate(zip(new_outs, ref_outs)):
        if not isinstance(ref, torch.Tensor):
            if not _same(new, ref):
                problems.append(f"output[{i}] is {new!r}, reference {ref!r}")
            continue
        if not isinstance(new, torch.Tensor):
            problems.append(f"output[{i}] is a {type(new).__name__}, not a tensor")
            continue
        for what in ("shape", "dtype", "device"):
            if getattr(new, what) != getattr(ref, what):
                problems.append(f"output[{i}] {what} {getattr(new, what)} vs reference {getattr(ref, what)}")
    if problems:
        return failed(name, "; ".join(problems), new=[tensor_meta(o) for o in new_outs],
                      ref=[tensor_meta(o) for o in ref_outs])
    first = next((o for o in ref_outs if isinstance(o, torch.Tensor)), None)
    detail = "" if first is None else f"{tuple(first.shape)} {str(first.dtype).replace('torch.', '')} {first.device}"
    return passed(name, detail, outputs=[tensor_meta(o) for o in ref_outs])


def check_contiguous(label: str, outs: list) -> Check:
    name = f"{label} output contiguous"
    bad = [i for i, o in enumerate(outs) if isinstance(o, torch.Tensor) and not o.is_contiguous()]
    if bad:
        return failed(name, f"output(s) {bad} not contiguous: strides {[outs[i].stride() for i in bad]}")
    return passed(name)


def check_close(name: str, new: torch.Tensor, ref: torch.Tensor, atol: float, rtol: float) -> Check:
    result = compare(new, ref, atol, rtol)
    data = result.as_dict()
    if result.nan_mismatch:
        return failed(name, result.summary(), **data)
    return Check(name, result.allclose, result.summary(), data)


def check_deterministic(label: str, first: list, again: list) -> Check:
    name = f"{label} deterministic"
    for i, (a, b) in enumerate(zip(first, again)):
        if not isinstance(a, torch.Tensor) or not isinstance(b, torch.Tensor):
            continue
        if shares_memory(a, b):
            return failed(name, f"output[{i}] of the second call is the same memory as the first's "
                                f"(an output buffer reused across calls)")
        if not bitwise_equal(a, b):
            return failed(name, f"output[{i}] differs bitwise between two calls on the same input: "
                                + compare(b, a, 0.0, 0.0).summary())
    return passed(name, "two calls, bitwise identical")


def upstream_for(ctx: Context, seed: int, draw_dtype: torch.dtype | None = None) -> Callable[[list], list]:
    """A function giving the same random upstream gradients for outputs of the same shapes: drawn in
    `draw_dtype` (default: each output's own dtype), then cast to the output's dtype."""
    def upstream(outs: list) -> list:
        generator = torch.Generator(device=ctx.device)
        generator.manual_seed(seed)
        return [torch.randn(o.shape, generator=generator, device=o.device, dtype=draw_dtype or o.dtype).to(o.dtype)
                for o in outs]
    return upstream


def forward_backward(ctx: Context, model, inputs: list, upstream: Callable, want_grads: bool):
    """Outputs (detached) and, if asked, {name: gradient} for the floating inputs and every trainable
    parameter; gradients are None if the outputs do not require grad at all."""
    leaves = [x for x in tensors_of(inputs) if x.is_floating_point()]
    for x in leaves:
        x.requires_grad_(want_grads)
    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    with torch.set_grad_enabled(want_grads):
        outs = ctx.run(model, inputs)
    if not want_grads:
        return outs, None
    touts = tensors_of(outs)
    diff = [(o, g) for o, g in zip(touts, upstream(touts)) if o.requires_grad]
    if not diff:
        return [o.detach() if isinstance(o, torch.Tensor) else o for o in outs], None
    grads = torch.autograd.grad([o for o, _ in diff], leaves + [p for _, p in named],
                                grad_outputs=[g for _, g in diff], allow_unused=True)
    ctx.sync()
    del diff
    names = [f"input[{i}]" for i in range(len(leaves))] + [n for n, _ in named]
    for x in leaves:
        x.requires_grad_(False)
    return [o.detach() if isinstance(o, torch.Tensor) else o for o in outs], dict(zip(names, grads))


def stage_backward(ctx: Context, trial: int) -> None:
    label = trial_label(trial)
    if not ctx.layout_ok.get(trial, False):
        ctx.add(skipped(f"{label} backward", "forward outputs not comparable"))
        return
    inputs = ctx.inputs(trial_kind(trial), trial_seed(ctx, trial))
    upstream = upstream_for(ctx, trial_seed(ctx, trial) + 1)
    _, ref_grads = forward_backward(ctx, ctx.ref_model, inputs, upstream, True)
    ctx.free()
    _, new_grads = forward_backward(ctx, ctx.new_model, inputs, upstream, True)
    if new_grads is None:
        ctx.add(failed(f"{label} backward", "the solution's output does not require grad (not trainable)"))
        return
    if ref_grads is None:
        ctx.add(skipped(f"{label} backward", "the reference's output does not require grad"))
        return
    checks = grad_checks(label, new_grads, ref_grads, ctx.atol, ctx.rtol)
    disputed = [key for key, check in zip(grad_keys(new_grads, ref_grads), checks)
                if check.ok is False and key in ref_grads
                and new_grads.get(key) is not None and ref_grads[key] is not None
                and new_grads[key].shape == ref_grads[key].shape]
    if disputed:
        # fresh inputs (same seed): a solution that wrote into its input must not move the arbiter's float64
        # gradient onto its own input
        del inputs
        inputs = ctx.inputs(trial_kind(trial), trial_seed(ctx, trial))
        distances = fp64_arbiter(ctx, inputs, upstream, disputed, new_grads, ref_grads)
        checks = [arbitrate(check, key, distances, ctx.atol) if key in disputed else check
                  for key, check in zip(grad_keys(new_grads, ref_grads), checks)]
    del inputs
    for check in checks:
        ctx.add(check)


def grad_keys(new_grads: dict, ref_grads: dict) -> list[str]:
    return list(ref_grads) + [k for k in new_grads if k not in ref_grads]


def grad_checks(label: str, new_grads: dict, ref_grads: dict, atol: float, rtol: float) -> list[Check]:
    checks = []
    for key in grad_keys(new_grads, ref_grads):
        name = f"{label} grad {key}"
        if key not in new_grads or key not in ref_grads:
            where = "solution" if key in new_grads else "reference"
            checks.append(failed(name, f"a trainable parameter only in the {where}"))
            continue
        new, ref = new_grads[key], ref_grads[key]
        if new is None and ref is None:
            checks.append(passed(name, "no gradient in either (unused)"))
        elif new is None or ref is None:
            checks.append(failed(name, f"gradient is None in the {'solution' if new is None else 'reference'} only"))
        elif new.shape != ref.shape or new.dtype != ref.dtype:
            checks.append(failed(name, f"{tuple(new.shape)} {new.dtype} vs reference {tuple(ref.shape)} {ref.dtype}"))
        else:
            checks.append(check_close(name, new, ref, atol, rtol))
    return checks


# ---- float64 arbitration of gradients -----------------------------------------------------------------
# A parameter gradient sums over the whole batch (for L1-35, 29 M terms per GroupNorm weight), and the
# reference's own float32 sum can be further from the truth than the tolerance; and where the reference
# runs its convolutions in TF32 (PyTorch's default for cuDNN), a float-rounding difference in the
# gradient reaching the convolution is amplified to ~1e-3 in its input and weight gradients. Either way
# "allclose to the reference" can fail for a solution that is as accurate as the reference, or more.
# So when a gradient misses the reference, the float64 gradient of the whole batch decides, computed
# with a float64 copy of the reference over chunks of the batch (the models are per-sample independent;
# checked by comparing each chunk's float64 output with the float32 reference's). The rule is the one of
# the float64 cross-check (check_vs_fp64): within tolerance of float64, or no more than twice as far
# from it as the reference (plus atol).

@dataclass
class Distance:
    """How far one float32 gradient is from the float64 one, accumulated over batch chunks."""
    max_abs: float = 0.0
    allclose: bool = True
    nan_mismatch: int = 0

    def add(self, cmp) -> None:
        self.max_abs = max(self.max_abs, cmp.max_abs)
        self.allclose = self.allclose and cmp.allclose
        self.nan_mismatch += cmp.nan_mismatch


def fp64_arbiter(ctx: Context, inputs: list, upstream: Callable, keys: list[str], new_grads: dict,
                 ref_grads: dict) -> dict | None:
    """{key: (solution's Distance, reference's Distance)} from float64, or None if the float64 gradient
    cannot be computed by chunks (no batched input, or samples that interact)."""
    leaves = [i for i, x in enumerate(inputs) if isinstance(x, torch.Tensor) and x.is_floating_point()]
    if not leaves or inputs[leaves[0]].dim() == 0:
        return None
    batch = inputs[leaves[0]].shape[0]
    with torch.no_grad():
        full_out = tensors_of(ctx.run(ctx.ref_model, inputs))
    grads_out = upstream(full_out)
    chunk = max(1, fp64_samples(ctx, batch) * 4)
    ref64 = _construct(ctx, ctx.ref_mod.Model, ctx.seed).double()
    ref64.load_state_dict(ctx.ref_model.state_dict())
    params = dict(ref64.named_parameters())
    param_keys = [k for k in keys if k in params]
    input_keys = {f"input[{n}]": i for n, i in enumerate(leaves) if f"input[{n}]" in keys}
    sums = {k: torch.zeros_like(params[k]) for k in param_keys}
    distances = {k: (Distance(), Distance()) for k in keys}
    for start in range(0, batch, chunk):
        part = [x[start:start + chunk].double().requires_grad_(i in input_keys.values()) if i in leaves else x
                for i, x in enumerate(inputs)]
        outs = tensors_of(outputs_of(ref64(*part)))
        for o, f in zip(outs, full_out):
            if o.shape[1:] != f.shape[1:] or not torch.allclose(o, f[start:start + chunk].double(), atol=1e-2, rtol=1e-2):
                return None
        wrt = [params[k] for k in param_keys] + [part[i] for i in input_keys.values()]
        gs = torch.autograd.grad(outs, wrt, [g[start:start + chunk].double() for g in grads_out], allow_unused=True)
        for key, g in zip(param_keys, gs):
            if g is not None:
                sums[key] += g
        for key, g in zip(input_keys, gs[len(param_keys):]):
            exact = torch.zeros_like(part[input_keys[key]]) if g is None else g
            for grads, distance in zip((new_grads, ref_grads), distances[key]):
                distance.add(compare(grads[key][start:start + chunk], exact, ctx.atol, ctx.rtol))
        del part, outs, gs
    for key in param_keys:
        for grads, distance in zip((new_grads, ref_grads), distances[key]):
            distance.add(compare(grads[key], sums[key], ctx.atol, ctx.rtol))
    ctx.free()
    return distances


def arbitrate(check: Check, key: str, distances: dict | None, atol: float) -> Check:
    if distances is None:
        check.detail += "; no float64 arbiter (the batch is not separable)"
        return check
    new, ref = distances[key]
    bound = 2 * ref.max_abs + atol
    ok = new.nan_mismatch == 0 and (new.allclose or new.max_abs <= bound)
    detail = (f"{check.detail}; float64 arbiter (whole batch): solution max|Δ| {new.max_abs:.3g}, "
              f"reference {ref.max_abs:.3g}, bound 2×ref+atol {bound:.3g} -> "
              + ("as accurate as the reference" if ok else "less accurate than the reference"))
    return Check(check.name, ok, detail, {**check.data, "arbiter": {
        "solution_vs_fp64_max_abs": new.max_abs, "reference_vs_fp64_max_abs": ref.max_abs, "bound": bound}})


def fp64_samples(ctx: Context, batch: int) -> int:
    """How many samples of the batch to run in float64 (at most 2; fewer if the device is short)."""
    k = min(batch, FP64_MAX_SAMPLES)
    if ctx.device.type != "cuda":
        return k
    per_sample = sum(8 * _numel(s.shape) // max(s.shape[0], 1) for s in ctx.specs if s.is_tensor and s.shape)
    free, _ = torch.cuda.mem_get_info(ctx.device)
    while k > 1 and 24 * per_sample * k > 0.8 * free:   # inputs, outputs, gradients of three models
        k -= 1
    return k


def _numel(shape) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def stage_fp64(ctx: Context) -> None:
    backward = ctx.config.get("backward", True)
    tensor_specs = [s for s in ctx.specs if s.is_tensor and s.dtype.is_floating_point and s.shape]
    if not tensor_specs:
        ctx.add(skipped("fp64", "no floating-point tensor input"))
        return
    batch = tensor_specs[0].shape[0]
    k = fp64_samples(ctx, batch)
    specs = sliced(ctx.specs, batch, k)
    seed = ctx.seed + 99
    ref64 = _construct(ctx, ctx.ref_mod.Model, ctx.seed).double()
    ref64.load_state_dict(ctx.ref_model.state_dict())
    upstream = upstream_for(ctx, seed + 1)
    up64 = upstream_for(ctx, seed + 1, draw_dtype=torch.float32)   # the same draws, cast to float64
    x32 = ctx.inputs("rand", seed, specs)
    x64 = [x.double() if isinstance(x, torch.Tensor) and x.is_floating_point() else x for x in x32]
    out64, grads64 = forward_backward(ctx, ref64, x64, up64, backward)
    del ref64, x64
    out_ref, grads_ref = forward_backward(ctx, ctx.ref_model, x32, upstream, backward)
    out_new, grads_new = forward_backward(ctx, ctx.new_model, x32, upstream, backward)
    label = f"fp64 ({k} of {batch} samples)"
    for i, (n, r, e) in enumerate(zip(out_new, out_ref, out64)):
        if not isinstance(e, torch.Tensor):
            continue
        suffix = f" output[{i}]" if len(out64) > 1 else ""
        ctx.add(check_vs_fp64(f"{label} forward{suffix}", n, r, e, ctx.atol, ctx.rtol))
    comparable = len(out_new) == len(out64) and all(
        isinstance(n, torch.Tensor) and n.shape == e.shape for n, e in zip(out_new, out64))
    if backward and not comparable:
        ctx.add(skipped(f"{label} gradients", "outputs not comparable"))
    elif backward and grads64 is not None and grads_ref is not None and grads_new is not None:
        for key, exact in grads64.items():
            n, r = grads_new.get(key), grads_ref.get(key)
            if exact is None or n is None or r is None:
                continue   # None-ness is judged in the trials
            ctx.add(check_vs_fp64(f"{label} grad {key}", n, r, exact, ctx.atol, ctx.rtol))


def check_vs_fp64(name: str, new, ref, exact, atol: float, rtol: float) -> Check:
    """Pass if the solution is within tolerance of float64, or no more than twice as far from it as the
    reference is (plus atol): a TF32 reference is itself ~3e-3 away from float64."""
    if not isinstance(new, torch.Tensor) or new.shape != exact.shape:
        return failed(name, f"output {tensor_meta(new)} vs float64 reference {tuple(exact.shape)}")
    new_cmp = compare(new, exact, atol, rtol)
    ref_cmp = compare(ref, exact, atol, rtol)
    bound = 2 * ref_cmp.max_abs + atol
    ok = new_cmp.nan_mismatch == 0 and (new_cmp.allclose or new_cmp.max_abs <= bound)
    detail = (f"solution vs fp64 max|Δ| {new_cmp.max_abs:.3g} (rel {new_cmp.max_rel:.3g}), reference vs fp64 "
              f"{ref_cmp.max_abs:.3g} (rel {ref_cmp.max_rel:.3g}); bound 2×ref+atol {bound:.3g}")
    if new_cmp.nan_mismatch:
        detail += f"; {new_cmp.nan_mismatch} NaN mismatches"
    return Check(name, ok, detail, {"solution_vs_fp64": new_cmp.as_dict(), "reference_vs_fp64": ref_cmp.as_dict(),
                                    "bound": bound})


def stage_bench(ctx: Context) -> None:
    from kgen.validate.bench import run_bench

    bench = run_bench(ctx.ref_model, ctx.new_model, lambda: ctx.inputs("rand", ctx.seed + 7),
                      backward=ctx.config.get("backward", True), device=ctx.device,
                      min_run_time=ctx.config.get("bench_min_run_time", 1.0), log=print)
    ctx.results.data["bench"] = bench
    ctx.results.flush()


def stages(config: dict) -> list[tuple[str, Callable[[Context], None]]]:
    plan = [("environment", stage_environment), ("import reference", stage_import_reference),
            ("build + import solution", stage_import_solution), ("arguments", stage_arguments),
            ("parameters", stage_parameters)]
    for trial in range(config.get("trials", 3)):
        plan.append((f"{trial_label(trial)} forward", lambda ctx, t=trial: stage_forward(ctx, t)))
        if config.get("backward", True):
            plan.append((f"{trial_label(trial)} backward", lambda ctx, t=trial: stage_backward(ctx, t)))
    plan.append(("fp64", stage_fp64))
    if config.get("bench"):
        plan.append(("bench", stage_bench))
    return plan


# ---- driver --------------------------------------------------------------------------------------------

def classify(stage: str, error: BaseException) -> str:
    if isinstance(error, StageError):
        return error.kind
    text = str(error)
    if stage.startswith("build") and "Error building extension" in text:
        return "build"
    if "CUDA error" in text or type(error).__name__ == "AcceleratorError":
        return "cuda"
    if stage.startswith("build"):
        return "import"
    if stage == "import reference":
        return "reference"
    return "exception"


def compiler_errors(text: str) -> list[str]:
    """nvcc's and the host compiler's error lines (`file(12): error: ...`, `file:12:3: error: ...`)."""
    return [line.strip() for line in text.splitlines() if re.search(r"\berror\b", line)]


def error_summary(kind: str, error: BaseException) -> str:
    """One line: the first compiler error for a build, else the exception's type and first line."""
    errors = compiler_errors(str(error)) if kind == "build" else []
    if errors:
        return "build failed: " + errors[0]
    text = str(error).strip()
    return f"{type(error).__name__}: {text.splitlines()[0] if text else ''}"


def error_message(kind: str, error: BaseException) -> str:
    """The traceback's tail; for a build error, the compiler's error lines first."""
    lines = traceback.format_exc().rstrip().splitlines()
    tail = "\n".join(lines[-TAIL_LINES:])
    errors = compiler_errors(str(error)) if kind == "build" else []
    head = "compiler errors:\n" + "\n".join(errors[:15]) + "\n---- output tail ----\n" if errors else ""
    return head + tail


def run(config: dict) -> int:
    results = Results(config["result"])
    ctx = Context(config=config, results=results, device=torch.device(config.get("device", "cuda")),
                  atol=config.get("atol", 1e-4), rtol=config.get("rtol", 1e-4), seed=config.get("seed", 42))
    for name, stage in stages(config):
        results.stage(name)
        try:
            stage(ctx)
        except Exception as error:
            kind = classify(name, error)
            results.error(kind, error_summary(kind, error), error_message(kind, error))
            print(traceback.format_exc(), file=sys.stderr, flush=True)
            return 2
        ctx.free()
    results.done()
    return 0


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m kgen.validate.runner CONFIG.json", file=sys.stderr)
        return 2
    return run(json.loads(Path(argv[1]).read_text()))


if __name__ == "__main__":
    sys.exit(main(sys.argv))
