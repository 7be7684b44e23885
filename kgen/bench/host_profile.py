"""Where the host time of one call of an emitted solution goes: Python's profiler (cProfile) over many calls issued
without synchronising, forward under no_grad and forward+backward, the functions by their own time. The extension's
entry points show as built-in methods (`region0_forward`, ...): their time is the C++ host side (argument conversion,
planning, allocation, launches); the rest is Python (autograd Functions, the file's helpers) and PyTorch's library
ops. The reference eager runs the same way beside it. Before the profile, unprofiled: the host time a call, and the
extension's entry points that call runs, each replayed alone with its arguments (their host time a call).

    python3 benchmarks/host_profile.py SOLUTION.py [--reference REF.py] [--calls 200] [--top 25] [--api]
        [--also NAME=PATH ...] [--json OUT]

--api adds a census of each contender's CUDA runtime / driver calls and ATen ops a call (torch.profiler), the counts
that say where a C++ entry point's host time goes (launches, attribute queries, allocations, a synchronisation).

Needs a CUDA device. The GPU work runs too: a model whose kernels outlast its host time a call is not host-bound,
and its calls queue up (the wall time a call is then the GPU's); this script says which (`gpu_bound`).
"""
from __future__ import annotations

import argparse
import cProfile
import importlib.util
import io
import json
import pstats
import statistics
import sys
import time
from pathlib import Path

import torch


def load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def synchronize() -> None:
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def call(model, inputs, grads, backward: bool):
    if not backward:
        with torch.no_grad():
            return model(*inputs)
    out = model(*inputs)
    outs = [o for o in (out if isinstance(out, (tuple, list)) else [out]) if isinstance(o, torch.Tensor)]
    torch.autograd.backward(outs, grads)
    return None


def host_profile(model, inputs, backward: bool, calls: int, top: int) -> dict:
    """cProfile over `calls` unsynchronised calls: wall ms a call (host issue time), GPU ms a call (synchronised
    run), and the top functions by own time (us a call)."""
    grads = None
    if backward:
        out = model(*inputs)
        outs = [o for o in (out if isinstance(out, (tuple, list)) else [out]) if isinstance(o, torch.Tensor)]
        grads = [torch.randn_like(o) for o in outs]
    for _ in range(10):
        call(model, inputs, grads, backward)
    synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        call(model, inputs, grads, backward)
    synchronize()
    synchronised_ms = (time.perf_counter() - start) / calls * 1e3
    profiler = cProfile.Profile()
    start = time.perf_counter()
    profiler.enable()
    for _ in range(calls):
        call(model, inputs, grads, backward)
    profiler.disable()
    issue_ms = (time.perf_counter() - start) / calls * 1e3
    synchronize()
    stats = pstats.Stats(profiler, stream=io.StringIO())
    rows = []
    for (filename, line, name), (_, ncalls, tottime, cumtime, _) in stats.stats.items():
        where = "built-in" if filename == "~" else f"{Path(filename).name}:{line}"
        rows.append({"function": f"{name} ({where})", "calls_per_call": round(ncalls / calls, 2),
                     "own_us": round(tottime / calls * 1e6, 2), "cumulative_us": round(cumtime / calls * 1e6, 2)})
    rows.sort(key=lambda r: -r["own_us"])
    return {"issue_ms_profiled": round(issue_ms, 4), "wall_ms_synchronised": round(synchronised_ms, 4),
            "gpu_bound": synchronised_ms > 1.2 * issue_ms, "top": rows[:top]}


def api_census(model, inputs, backward: bool, calls: int) -> dict:
    """What one call asks of PyTorch's dispatcher and of the CUDA runtime and driver (torch.profiler's CPU and CUDA
    activities over `calls` calls): each runtime / driver call (cudaLaunchKernel, cudaFuncSetAttribute,
    cudaOccupancy..., a cudaStreamSynchronize that would stall the host) and each ATen op, as counts and host us a
    call. The profiler's own cost inflates the times; the counts are exact."""
    from torch.profiler import ProfilerActivity, profile
    grads = upstream(model, inputs, backward)
    for _ in range(3):
        call(model, inputs, grads, backward)
    synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            call(model, inputs, grads, backward)
        synchronize()
    runtime, aten = [], []
    for avg in prof.key_averages():
        row = {"name": avg.key, "per_call": round(avg.count / calls, 2),
               "us_per_call": round(avg.self_cpu_time_total / calls, 2)}
        if avg.key.startswith(("cuda", "cu")) and not avg.key.startswith("cudnn"):
            runtime.append(row)
        elif avg.key.startswith("aten::"):
            aten.append(row)
    runtime.sort(key=lambda r: -r["us_per_call"])
    aten.sort(key=lambda r: -r["per_call"])
    return {"runtime": runtime, "aten": aten,
            "aten_ops_per_call": round(sum(r["per_call"] for r in aten), 1)}


def issue_ms(model, inputs, grads, backward: bool, calls: int) -> float:
    """Host time a call, unprofiled: `calls` calls issued back to back after a synchronisation (few enough launches
    to stay below the launch queue's depth, so that no call waits for the GPU)."""
    call(model, inputs, grads, backward)
    synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        call(model, inputs, grads, backward)
    elapsed = time.perf_counter() - start
    synchronize()
    return elapsed / calls * 1e3


class Recorder:
    """Stands in for a solution's `_ext`: passes every call on and keeps (entry point, arguments), and each call's
    output."""

    def __init__(self, ext):
        self.ext, self.calls, self.outputs = ext, [], []

    def __getattr__(self, name):
        fn = getattr(self.ext, name)
        if not callable(fn):
            return fn

        def recorded(*args):
            self.calls.append((name, args))
            out = fn(*args)
            self.outputs.append(out)
            return out
        return recorded


def entry_points(module, model, inputs, grads, backward: bool, calls: int) -> list[dict]:
    """The extension's entry points one call runs, each replayed `calls` times with the arguments it had: its host
    time a call (argument conversion, checks, planning, allocation, launches), unprofiled."""
    recorder = Recorder(module._ext)
    module._ext = recorder
    try:
        call(model, inputs, grads, backward)
    finally:
        module._ext = recorder.ext
    return [{"entry": name, "us": round(replay_us(getattr(recorder.ext, name), args, calls), 2)}
            for name, args in recorder.calls]


def replay_us(fn, args: tuple, calls: int) -> float:
    """Host us a call of `fn(*args)`, unprofiled: one call, a synchronisation, then `calls` calls issued back to back."""
    fn(*args)
    synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        fn(*args)
    elapsed = time.perf_counter() - start
    synchronize()
    return elapsed / calls * 1e6


def upstream(model, inputs, backward: bool):
    """The fixed upstream gradients of a forward+backward call (None for a forward)."""
    if not backward:
        return None
    out = model(*inputs)
    return [torch.randn_like(o) for o in (out if isinstance(out, (tuple, list)) else [out]) if isinstance(o, torch.Tensor)]


def entry_point_times(module, model, inputs, backward: bool, calls: int) -> dict:
    """Where `module` has an extension, its entry points' host time a call ({} where it has none)."""
    if module is None or not hasattr(module, "_ext"):
        return {}
    rows = entry_points(module, model, inputs, upstream(model, inputs, backward), backward, calls)
    return {"entry_points": rows, "entry_points_ms": round(sum(r["us"] for r in rows) / 1e3, 4)}


def plain_times(module, model, inputs, backward: bool, calls: int) -> dict:
    """Unprofiled: the call's host time, and where `module` has an extension, its entry points' share of it."""
    grads = upstream(model, inputs, backward)
    return {"issue_ms": round(issue_ms(model, inputs, grads, backward, calls), 4),
            **entry_point_times(module, model, inputs, backward, calls)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("solution")
    parser.add_argument("--reference", help="the reference file: its eager model profiled beside")
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--plain-calls", type=int, default=50,
                        help="calls of the unprofiled timings (few: their launches stay below the queue's depth)")
    parser.add_argument("--rounds", type=int, default=7,
                        help="unprofiled rounds, the contenders alternating (the median is reported)")
    parser.add_argument("--api", action="store_true",
                        help="also count each contender's CUDA runtime / driver calls and ATen ops a call "
                             "(torch.profiler)")
    parser.add_argument("--also", action="append", default=[], metavar="NAME=PATH",
                        help="another solution file timed in the same process (the same reference emitted from another "
                             "checkout, say): the host's drift between processes exceeds the differences sought")
    parser.add_argument("--json")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("host_profile: no CUDA device", file=sys.stderr)
        return 3
    solution = Path(args.solution).resolve()
    new_mod = load(solution, "host_profile_solution")
    contenders = {"kgen": new_mod.ModelNew}
    modules = {"kgen": new_mod}
    for spec in args.also:
        name, sep, path = spec.partition("=")
        if not sep or name in ("kgen", "eager"):
            parser.error(f"--also takes NAME=PATH with a NAME other than kgen and eager, got {spec!r}")
        modules[name] = load(Path(path).resolve(), f"host_profile_{name}")
        contenders[name] = modules[name].ModelNew
    if args.reference:
        contenders["eager"] = load(Path(args.reference).resolve(), "host_profile_reference").Model
    torch.manual_seed(0)
    inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in new_mod.get_inputs()]
    report = {"solution": str(solution), "gpu": torch.cuda.get_device_name(), "torch": torch.__version__}
    models = {}
    for name, cls in contenders.items():
        torch.manual_seed(0)
        models[name] = cls(*new_mod.get_init_inputs()).cuda()
    modes = (("forward", False), ("forward_backward", True))

    def leaves(backward: bool) -> list:
        return [x.detach().requires_grad_(backward) if isinstance(x, torch.Tensor) and x.is_floating_point() else x
                for x in inputs]

    # Unprofiled, the contenders alternating round by round: the host's own drift (a few to 20 % between processes
    # on the H200's host) falls on all of them alike; the median of the rounds is reported.
    issued = {(name, mode): [] for name in models for mode, _ in modes}
    for _ in range(args.rounds):
        for mode, backward in modes:
            for name, model in models.items():
                issued[(name, mode)].append(plain_times(None, model, leaves(backward), backward,
                                                        args.plain_calls)["issue_ms"])
    for mode, backward in modes:
        for name, model in models.items():
            plain = {"issue_ms": round(statistics.median(issued[(name, mode)]), 4),
                     "issue_ms_rounds": issued[(name, mode)],
                     **entry_point_times(modules.get(name), model, leaves(backward), backward, args.plain_calls)}
            report[f"{name}_{mode}_plain"] = plain
            print(f"== {name} {mode}: {plain['issue_ms']} ms a call issued (unprofiled, median of {args.rounds} "
                  f"rounds: {', '.join(f'{v:.3f}' for v in plain['issue_ms_rounds'])})" +
                  (f", of which the extension's entry points {plain['entry_points_ms']} ms: " +
                   ", ".join(f"{r['entry']} {r['us']} us" for r in plain["entry_points"])
                   if "entry_points" in plain else ""))
    for name, model in models.items():
        for mode, backward in modes:
            result = host_profile(model, leaves(backward), backward, args.calls, args.top)
            report[f"{name}_{mode}"] = result
            print(f"== {name} {mode}: {result['issue_ms_profiled']} ms a call issued (profiled), "
                  f"{result['wall_ms_synchronised']} ms synchronised{' (GPU-bound)' if result['gpu_bound'] else ''}")
            for row in result["top"]:
                print(f"  {row['own_us']:9.2f} us own  {row['cumulative_us']:9.2f} us cum  "
                      f"x{row['calls_per_call']:<5}  {row['function'][:110]}")
    for name, model in (models.items() if args.api else ()):
        for mode, backward in modes:
            census = api_census(model, leaves(backward), backward, 20)
            report[f"{name}_{mode}_api"] = census
            print(f"== {name} {mode}: runtime and driver calls a call (profiled us), {census['aten_ops_per_call']} "
                  f"ATen ops a call")
            for row in census["runtime"]:
                print(f"  {row['us_per_call']:9.2f} us  x{row['per_call']:<6}  {row['name']}")
            print("  ATen ops by count: " + ", ".join(f"{r['name'][6:]} x{r['per_call']}" for r in census["aten"][:25]))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
