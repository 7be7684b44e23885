"""What every stage of the runner (kgen.validate.runner) shares: the results file it keeps up to date, the
context object passed from stage to stage, and the drawing of inputs.

    Results     the child's result JSON, rewritten after every check (a crash leaves what was found)
    Context     config, device, tolerances, the run's dtypes, the two imported modules and the two constructed
                models
    run_dtypes  --precision and --autocast as dtypes: what the models and floating inputs are moved to, and
                what every forward of both models autocasts to (the float64 truth runs without autocast)
    channels_last  --channels-last: a 4-d tensor in torch.channels_last, a 5-d one in torch.channels_last_3d
    InputSpec   one positional input of forward (shape and dtype, or a plain value); make_inputs draws them
    StageError  a problem that ends the run with a kind the report shows ("usage", "no-cuda", ...)
"""
from __future__ import annotations

import contextlib
import gc
import importlib.machinery
import importlib.util
import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import torch

from kgen.validate.checks import Check

PROGRESS_PREFIX = "[kgen-progress] "   # a line of the child's log that the parent shows as progress

# The random state every model call starts from: the run's seed plus this.
CALL_SEED_OFFSET = 7919

DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}   # --precision, --autocast


class StageError(Exception):
    """A problem that ends the run, with the kind the report shows (e.g. "usage")."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


def progress(text: str) -> None:
    """A progress line for the parent (kgen.validate.progress shows it on stderr); not part of any result."""
    print(PROGRESS_PREFIX + text, flush=True)


# ---- results file --------------------------------------------------------------------------------------

class Results:
    """The result JSON, rewritten atomically after every change; progress lines go to stdout (the log)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.data = {"status": "running", "stage": None, "checks": [], "info": {}, "bench": None, "error": None,
                     "kernelbench": None, "kernels": None}
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

    def put(self, key: str, value) -> None:
        """A top-level section of the result (bench, kernelbench, kernels)."""
        self.data[key] = value
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
                materialize: Callable[[], list] | None = None, cast: torch.dtype | None = None,
                layout: bool = False) -> list:
    """Fresh inputs: floating tensors drawn with `kind` in their own dtype, then moved to `cast` where given
    (--precision: the same draws, rounded) and, with `layout` (--channels-last), laid out channels-last where they
    have 4 or 5 dims (the same values); other tensors taken from the reference's get_inputs() (called under the
    same seed); non-tensors passed as they are."""
    generator = torch.Generator(device=device)
    generator.manual_seed(seed)
    real = None
    inputs = []
    for i, spec in enumerate(specs):
        if not spec.is_tensor:
            inputs.append(spec.value)
        elif spec.dtype.is_floating_point:
            x = draw(spec.shape, spec.dtype, kind, generator, device)
            x = x if cast is None else x.to(cast)
            inputs.append(channels_last(x) if layout else x)
        else:
            if real is None:
                torch.manual_seed(seed)
                real = list(materialize())
            inputs.append(leading(real[i], spec.shape).to(device))
    return inputs


def channels_last(t: torch.Tensor) -> torch.Tensor:
    """t laid out channels-last where it has 4 dims (torch.channels_last) or 5 (torch.channels_last_3d); else t."""
    formats = {4: torch.channels_last, 5: torch.channels_last_3d}
    return t.contiguous(memory_format=formats[t.dim()]) if t.dim() in formats else t


def to_channels_last(model: torch.nn.Module) -> torch.nn.Module:
    """The model's 4-d and 5-d parameters and buffers laid out channels-last, in place (as `model.to(memory_format=
    torch.channels_last)` does for 4-d ones; 5-d ones take channels_last_3d); the model."""
    for module in model.modules():
        for name, p in list(module.named_parameters(recurse=False)):
            if p is not None and p.dim() in (4, 5):
                p.data = channels_last(p.data)
        for name, b in list(module.named_buffers(recurse=False)):
            if b is not None and b.dim() in (4, 5):
                module._buffers[name] = channels_last(b)
    return model


def leading(t: torch.Tensor, shape: tuple) -> torch.Tensor:
    """An input get_inputs() made (an index tensor, a mask) cut to the first samples where the check runs on fewer
    (the float64 stage's slice of the batch); else as it is."""
    if t.dim() and tuple(t.shape) != tuple(shape) and len(shape) == t.dim() and tuple(t.shape[1:]) == tuple(shape[1:]) \
            and shape[0] <= t.shape[0]:
        return t[:shape[0]]
    return t


def draw(shape, dtype, kind: str, generator, device) -> torch.Tensor:
    if kind == "rand":
        return torch.rand(shape, generator=generator, device=device, dtype=dtype)
    t = torch.randn(shape, generator=generator, device=device, dtype=dtype)
    return t.mul_(2).add_(3)


def reference_error(error: RuntimeError) -> str:
    """What the reference itself raised, in one line, where that is the reference's doing (its own backward
    rejecting an in-place op, KernelBench's float32 cast of an index input): a CUDA error is re-raised, since that
    is a broken run."""
    if "CUDA error" in str(error) or type(error).__name__ == "AcceleratorError":
        raise error
    text = str(error).strip()
    return f"{type(error).__name__}: {text.splitlines()[0][:160] if text else ''}"


def outputs_of(out) -> list:
    return list(out) if isinstance(out, (tuple, list)) else [out]


def tensors_of(values) -> list[torch.Tensor]:
    return [v for v in values if isinstance(v, torch.Tensor)]


def same_value(a, b) -> bool:
    try:
        return bool(a == b)
    except Exception:
        return repr(a) == repr(b)


# ---- the run's dtypes ----------------------------------------------------------------------------------

def run_dtypes(config: dict) -> tuple[torch.dtype | None, torch.dtype | None]:
    """(what the models and floating inputs are moved to: None at --precision fp32, the default, where they stay
    as the reference makes them; what every forward autocasts to, or None)."""
    precision, autocast = config.get("precision") or "fp32", config.get("autocast")
    if precision not in DTYPES or (autocast is not None and autocast not in DTYPES):
        raise StageError("usage", f"precision {precision!r}, autocast {autocast!r}: give fp32, fp16 or bf16")
    if precision != "fp32" and autocast is not None:
        raise StageError("usage", f"precision {precision} and autocast {autocast} together: give one")
    return (None if precision == "fp32" else DTYPES[precision]), (None if autocast is None else DTYPES[autocast])


def dtype_name(dtype: torch.dtype) -> str:
    return next(name for name, d in DTYPES.items() if d == dtype)


# ---- context shared by the stages ----------------------------------------------------------------------

@dataclass
class Context:
    config: dict
    results: Results
    device: torch.device
    atol: float
    rtol: float
    seed: int
    cast: torch.dtype | None = None       # --precision fp16|bf16: models and floating inputs moved to it
    autocast: torch.dtype | None = None   # --autocast: every forward under torch.autocast(device type, this)
    layout: bool = False                  # --channels-last: models' and floating inputs' 4-/5-d tensors channels-last
    ref_mod: object = None
    new_mod: object = None
    init: list = field(default_factory=list)
    specs: list = field(default_factory=list)
    ref_model: object = None
    new_model: object = None
    layout_ok: dict = field(default_factory=dict)   # trial -> whether outputs could be compared
    extensions: list = field(default_factory=list)  # shared libraries the solution loaded (kgen.validate.stages.kernels)

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

    @property
    def arithmetic(self) -> torch.dtype:
        """The narrowest dtype the run computes in: the noise model's (numerics.rounding_excess)."""
        return self.cast or self.autocast or torch.float32

    def autocasting(self, enabled: bool = True):
        """torch.autocast for the run's device type and --autocast dtype; nothing without --autocast."""
        if self.autocast is None or not enabled:
            return contextlib.nullcontext()
        return torch.autocast(self.device.type, dtype=self.autocast)

    def inputs(self, kind: str, seed: int, specs: list | None = None, layout: bool | None = None) -> list:
        """Fresh inputs (make_inputs) at the run's dtype and layout (`layout`: the run's unless given)."""
        return make_inputs(self.specs if specs is None else specs, kind, seed, self.device,
                           materialize=self.ref_mod.get_inputs, cast=self.cast,
                           layout=self.layout if layout is None else layout)

    def run(self, model, inputs, same_draws: bool = False, autocast: bool = True) -> list:
        """Call a model and wait for the device, so an asynchronous CUDA error surfaces here. same_draws: start
        from a fixed random state, so that a reference that draws (dropout in training mode) and a solution
        making the same PyTorch calls draw the same numbers (the calls whose results are compared; the
        determinism checks' repeated calls are not reseeded, so a solution whose output follows the random
        state still shows as nondeterministic). Under --autocast unless `autocast` is False (the float64 truth)."""
        if same_draws:
            torch.manual_seed(self.seed + CALL_SEED_OFFSET)
        with self.autocasting(autocast):
            out = outputs_of(model(*inputs))
        self.sync()
        return out

    def construct(self, cls, seed: int | None = None, init: list | None = None, layout: bool | None = None):
        """cls(*init) right after torch.manual_seed(seed) (the evaluator's same-seed construction), on the device,
        then moved to --precision's dtype where given (as KernelBench's `.to(device, dtype)`) and laid out
        channels-last with --channels-last (`layout`: the run's unless given)."""
        torch.manual_seed(self.seed if seed is None else seed)
        model = cls(*(self.init if init is None else init)).to(self.device)
        model = model if self.cast is None else model.to(self.cast)
        return to_channels_last(model) if (self.layout if layout is None else layout) else model


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
