"""The child process of `kgen validate`: everything that runs the solution.

    python -m kgen.validate.runner CONFIG.json

It runs the stages of `stages(config)` in order, one module each under kgen/validate/stages/:

    environment, import reference, build + import solution, arguments, parameters   setup.py
    KernelBench (its own protocol: forward, atol=rtol=1e-4; reported apart)          kernelbench.py
    trial N forward / trial N backward (determinism in determinism.py; a disputed
      output or gradient arbitrated by float64 and rounding noise)                   trials.py, arbiter.py
    output follows its input (the degenerate-output guard)                           dependence.py
    fp64 (float64 cross-check on a slice of the batch)                               fp64.py
    kernels (torch.profiler: the solution's kernels' share of the GPU time)          kernels.py
    bench (--bench)                                                                  kgen/validate/bench.py

Every stage runs at the config's "precision" (the models and floating inputs moved to fp16 or bf16) or under
its "autocast" (each forward under torch.autocast for the device's type), context.run_dtypes; atol and rtol
not given are KernelBench's for that dtype.

Results go to the JSON file named in the config (kgen.validate.context.Results), rewritten after every
check, so a crash or a hang leaves what was found before it. Each stage's name, and finer progress, is
printed on stdout, which the parent follows to show progress. An exception raised while the solution
runs (a build error, an import error, a CUDA error) ends the run: it is recorded as the file being
broken, with its traceback's tail. The parent (kgen.validate.runtime) turns this file into the report
and the exit code.

This module may use try/except; only solution files are forbidden from using it.
"""
from __future__ import annotations

import json
import re
import sys
import traceback
from pathlib import Path
from typing import Callable

import torch

from kgen.validate.arguments import default_tolerance
from kgen.validate.context import (Context, InputSpec, Results, StageError, describe_inputs,  # noqa: F401
                                   import_file, make_inputs, progress, run_dtypes)
from kgen.validate.stages.calls import EVAL_TRIAL, trial_label
from kgen.validate.stages.dependence import stage_dependence
from kgen.validate.stages.fp64 import stage_fp64
from kgen.validate.stages.kernelbench import stage_kernelbench
from kgen.validate.stages.kernels import stage_kernels
from kgen.validate.stages.setup import (stage_arguments, stage_environment, stage_import_reference,
                                        stage_import_solution, stage_parameters)
from kgen.validate.stages.modes import stage_eval_backward, stage_eval_forward
from kgen.validate.stages.trials import stage_backward, stage_forward

TAIL_LINES = 40


def stage_bench(ctx: Context) -> None:
    from kgen.validate.bench import run_bench

    bench = run_bench(ctx.ref_model, ctx.new_model, lambda: ctx.inputs("rand", ctx.seed + 7),
                      backward=ctx.config.get("backward", True), device=ctx.device,
                      min_run_time=ctx.config.get("bench_min_run_time", 1.0), log=print,
                      forward_context=ctx.autocasting)
    ctx.results.put("bench", {**bench, "precision": ctx.config.get("precision") or "fp32",
                              "autocast": ctx.config.get("autocast"), "channels_last": bool(ctx.config.get("channels_last"))})


def stages(config: dict) -> list[tuple[str, Callable[[Context], None]]]:
    plan = [("environment", stage_environment), ("import reference", stage_import_reference),
            ("build + import solution", stage_import_solution), ("arguments", stage_arguments),
            ("parameters", stage_parameters)]
    if config.get("kernelbench", True):
        plan.append(("KernelBench protocol", stage_kernelbench))
    for trial in range(config.get("trials", 3)):
        plan.append((f"{trial_label(trial)} forward", lambda ctx, t=trial: stage_forward(ctx, t)))
        if config.get("backward", True):
            plan.append((f"{trial_label(trial)} backward", lambda ctx, t=trial: stage_backward(ctx, t)))
    plan.append((f"{trial_label(EVAL_TRIAL)} forward", stage_eval_forward))
    if config.get("backward", True):
        plan.append((f"{trial_label(EVAL_TRIAL)} backward", stage_eval_backward))
    plan.append(("output follows its input", stage_dependence))
    plan.append(("fp64", stage_fp64))
    if config.get("kernels", True):
        plan.append(("kernels", stage_kernels))
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
    """One line: the first compiler error for a build, a StageError's message, else the exception's type and first
    line."""
    errors = compiler_errors(str(error)) if kind == "build" else []
    if errors:
        return "build failed: " + errors[0]
    text = str(error).strip()
    if isinstance(error, StageError):   # kgen's own words: the kind says what it is
        return text.splitlines()[0] if text else kind
    return f"{type(error).__name__}: {text.splitlines()[0] if text else ''}"


def error_message(kind: str, error: BaseException) -> str:
    """The traceback's tail; for a build error, the compiler's error lines first."""
    lines = traceback.format_exc().rstrip().splitlines()
    tail = "\n".join(lines[-TAIL_LINES:])
    errors = compiler_errors(str(error)) if kind == "build" else []
    head = "compiler errors:\n" + "\n".join(errors[:15]) + "\n---- output tail ----\n" if errors else ""
    return head + tail


def run(config: dict) -> int:
    if not config.get("tf32", True):  # before anything runs: every contender sees the same library precision
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cuda.matmul.allow_tf32 = False
    results = Results(config["result"])
    try:
        cast, autocast = run_dtypes(config)
    except StageError as error:
        results.error(error.kind, str(error), str(error))
        return 2
    tol = default_tolerance(config.get("precision") or "fp32", config.get("autocast"))
    ctx = Context(config=config, results=results, device=torch.device(config.get("device", "cuda")),
                  atol=_given(config, "atol", tol), rtol=_given(config, "rtol", tol), seed=config.get("seed", 42),
                  cast=cast, autocast=autocast, layout=bool(config.get("channels_last")))
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


def _given(config: dict, key: str, default: float) -> float:
    value = config.get(key)
    return default if value is None else value


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m kgen.validate.runner CONFIG.json", file=sys.stderr)
        return 2
    return run(json.loads(Path(argv[1]).read_text()))


if __name__ == "__main__":
    sys.exit(main(sys.argv))
