"""`kgen validate --bench`: time the solution against the reference, eager and under torch.compile.

Each contender is timed with `torch.utils.benchmark.Timer.blocked_autorange` (which synchronises the
device around each block) after a warm-up; the figure is the median in milliseconds. Two measurements:
  forward           under torch.no_grad()
  forward+backward  one leaf input and a fixed, precomputed upstream gradient; the input's and every
                    parameter's .grad set to None between iterations, so no accumulation is timed.
A torch.compile that fails is reported as unavailable, not as a failure of the solution.
At --precision fp16|bf16 the models and inputs it is given are in that dtype already (so are the timings);
under --autocast `forward_context` is the run's torch.autocast, entered around every forward of every
contender, torch.compile's included, the backward outside it, as in training.
"""
from __future__ import annotations

import contextlib
import gc
import time
from typing import Callable, ContextManager

import torch
from torch.utils import benchmark

METHOD = ("torch.utils.benchmark blocked_autorange, median ms after warm-up; forward under no_grad; "
          "forward+backward: fixed upstream gradient, input and parameter grads set to None each iteration; "
          "host: the caller's wall time per call over 20 calls issued without synchronising (launch-bound where it "
          "reaches the ms)")
HOST_CALLS = 20


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _free(device: torch.device) -> None:
    if device.type == "cuda":
        gc.collect()
        torch.cuda.empty_cache()


def _outputs(out) -> list:
    return [o for o in (out if isinstance(out, (tuple, list)) else [out]) if isinstance(o, torch.Tensor)]


def median_ms(fn: Callable[[], None], device: torch.device, min_run_time: float, warmup: int = 3) -> dict:
    for _ in range(warmup):
        fn()
    _sync(device)
    measurement = benchmark.Timer(stmt="fn()", globals={"fn": fn}).blocked_autorange(min_run_time=min_run_time)
    return {"ms": measurement.median * 1e3, "iqr_ms": measurement.iqr * 1e3,
            "runs": len(measurement.times), "per_run": measurement.number_per_run}


def host_ms(fn: Callable[[], None], device: torch.device, calls: int = HOST_CALLS) -> float:
    """The time the caller spends in one call: `calls` calls back to back after a synchronisation, without one
    between them, so that the GPU's work overlaps the next call's Python and launches (a few hundred launches stay
    far below the launch queue's depth). A model whose host time reaches its GPU time is bound by the host."""
    _sync(device)
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    elapsed = time.perf_counter() - start
    _sync(device)
    return elapsed * 1e3 / calls


Forward = Callable[[], ContextManager]   # what every forward runs under (the run's autocast, or nothing)


def forward_step(model, inputs: list, forward_context: Forward = contextlib.nullcontext) -> Callable[[], None]:
    def step() -> None:
        with torch.no_grad(), forward_context():
            model(*inputs)
    return step


def forward_backward_step(model, inputs: list, upstream: list,
                          forward_context: Forward = contextlib.nullcontext) -> Callable[[], None]:
    leaves = [x for x in inputs if isinstance(x, torch.Tensor) and x.requires_grad]
    params = list(model.parameters())

    def step() -> None:
        for x in leaves:
            x.grad = None
        for p in params:
            p.grad = None
        with forward_context():
            outs = _outputs(model(*inputs))
        torch.autograd.backward(outs, upstream)
    return step


def _leaf_inputs(inputs: list) -> list:
    return [x.detach().requires_grad_(True) if isinstance(x, torch.Tensor) and x.is_floating_point() else x
            for x in inputs]


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return f"{type(error).__name__}: {text.splitlines()[0] if text else ''}"[:300]


def time_contender(model, inputs: list, upstream: list | None, device, min_run_time: float,
                   forward_context: Forward = contextlib.nullcontext) -> dict:
    """{"forward": {...} or {"error": ...}, "forward_backward": ...} for one model."""
    result = {}
    try:
        step = forward_step(model, inputs, forward_context)
        result["forward"] = median_ms(step, device, min_run_time)
        result["forward"]["host_ms"] = host_ms(step, device)
    except Exception as error:
        result["forward"] = {"error": _first_line(error)}
    _free(device)
    if upstream is not None:
        leaves = _leaf_inputs(inputs)
        try:
            step = forward_backward_step(model, leaves, upstream, forward_context)
            result["forward_backward"] = median_ms(step, device, min_run_time)
            result["forward_backward"]["host_ms"] = host_ms(step, device)
        except Exception as error:
            result["forward_backward"] = {"error": _first_line(error)}
        for p in model.parameters():
            p.grad = None
        del leaves
        _free(device)
    return result


def _speedups(times: dict, mode: str) -> dict:
    row = {name: times[name].get(mode, {}).get("ms") for name in times}
    new = row.get("new")
    out = {f"{name}_ms": ms for name, ms in row.items()}
    out.update({f"{name}_host_ms": times[name].get(mode, {}).get("host_ms") for name in times})
    for name in ("eager", "compile"):
        base = row.get(name)
        out[f"speedup_vs_{name}"] = base / new if base and new else None
    errors = {name: times[name][mode]["error"] for name in times if "error" in times[name].get(mode, {})}
    if errors:
        out["errors"] = errors
    return out


def run_bench(ref_model, new_model, make_inputs: Callable[[], list], backward: bool, device: torch.device,
              min_run_time: float = 1.0, log: Callable[[str], None] = print,
              forward_context: Forward = contextlib.nullcontext) -> dict:
    """Time ModelNew, the reference eager, and torch.compile(reference); speedups are eager/new and
    compile/new (above 1: the solution is faster). Every forward under `forward_context()`."""
    inputs = make_inputs()
    upstream = None
    if backward:
        with torch.no_grad(), forward_context():
            upstream = [torch.randn_like(o) for o in _outputs(ref_model(*inputs))]
    times = {}
    for name in ("new", "eager", "compile"):
        log(f"[kgen-bench] {name}")
        if name == "compile":
            times[name] = time_compiled(ref_model, inputs, upstream, device, min_run_time, forward_context)
        else:
            model = new_model if name == "new" else ref_model
            times[name] = time_contender(model, inputs, upstream, device, min_run_time, forward_context)
        log(f"[kgen-bench] {name}: {times[name]}")
        _free(device)
    result = {"method": METHOD, "contenders": times, "forward": _speedups(times, "forward")}
    if backward:
        result["forward_backward"] = _speedups(times, "forward_backward")
    return result


def time_compiled(ref_model, inputs: list, upstream: list | None, device, min_run_time: float,
                  forward_context: Forward = contextlib.nullcontext) -> dict:
    try:
        compiled = torch.compile(ref_model)
    except Exception as error:
        message = {"error": "torch.compile unavailable: " + _first_line(error)}
        return {"forward": message, "forward_backward": message}
    try:
        return time_contender(compiled, inputs, upstream, device, min_run_time, forward_context)
    finally:
        del compiled
        torch._dynamo.reset()
