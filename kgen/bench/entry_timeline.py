"""Inside each extension entry point of a solution, where the host time goes (benchmarks/host_timeline.py follows a
whole call instead). The entry points one call of the model runs (its forward under grad mode, as training calls
them) are each replayed under torch.profiler, a marker around every replay. Reported: what the profiler records inside
a marker (ATen ops, CUDA runtime calls), nested, as offsets from the entry's start; and the time nothing recorded
covers, the entry's own C++ (argument conversion, checks, planning, the autograd node) and pybind11's. Each entry's
backward node is replayed the same way: called with a fixed upstream gradient, grad mode off as the engine runs it
(its C++ apply, the backward entry point, the gradients' assembly). Beside each region entry point: PyTorch's own
group_norm on the same input, and its backward node.

    python3 benchmarks/entry_timeline.py SOLUTION.py [--calls 40] [--json OUT]

The profiler's own cost inflates every recorded call (a few us each); the unprofiled time a call of each entry point
is printed beside it. Needs a CUDA device for a solution; the interval arithmetic (`timeline`) is plain Python.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

import torch

from kgen.bench.host_profile import Recorder, load, replay_us, synchronize

MARK = "kgen_entry_timeline_entry"
PROFILER_OWN = ("Activity Buffer",)   # the profiler's own events (its first buffer's request), not the entry's
ACTIVITIES_CUDA = True   # record CUDA runtime calls too (where a device is)


@dataclass(frozen=True)
class Span:
    """One recorded host event: its name and its start and end in us (any common origin)."""
    name: str
    start: float
    end: float


def outermost(spans: list[Span]) -> list[Span]:
    """The spans no other span of the list contains, in start order."""
    ordered = sorted(spans, key=lambda s: (s.start, -s.end))
    top: list[Span] = []
    for span in ordered:
        if top and span.end <= top[-1].end:
            continue
        top.append(span)
    return top


def timeline(mark: Span, events: list[Span], depth: int = 3) -> dict:
    """What happened inside `mark`: its outermost events as (offset from the mark's start, duration, name), their total,
    and the mark's time outside all of them (`own_us`); each event's own outermost events inside it the same way
    (`inside`, `depth` levels down: an autograd node's ATen calls, a probe's scope)."""
    inside = [e for e in events if e is not mark and e.start >= mark.start and e.end <= mark.end]
    top = outermost(inside)
    covered = sum(e.end - e.start for e in top)
    total = mark.end - mark.start
    rows = []
    for e in top:
        row = {"at_us": round(e.start - mark.start, 2), "us": round(e.end - e.start, 2), "name": e.name}
        if depth > 1:
            nested = timeline(e, [o for o in inside if o is not e], depth - 1)
            if nested["events"]:
                row["inside"] = nested
        rows.append(row)
    return {"total_us": round(total, 2), "own_us": round(total - covered, 2), "events": rows}


def profiled_replays(fn, args: tuple, calls: int) -> list[dict]:
    """`fn(*args)` replayed `calls` times under torch.profiler, a marker around each: each replay's timeline."""
    from torch.profiler import ProfilerActivity, profile, record_function
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if ACTIVITIES_CUDA and torch.cuda.is_available() else [])
    for _ in range(3):
        fn(*args)
    synchronize()
    with profile(activities=activities) as prof:
        for _ in range(calls):
            with record_function(MARK):
                fn(*args)
        synchronize()
    # host events only: a kernel's span is the GPU's, on another clock's timeline
    spans = [Span(e.name, e.time_range.start, e.time_range.end) for e in prof.events()
             if e.device_type == torch.autograd.DeviceType.CPU and not e.name.startswith(PROFILER_OWN)]
    marks = [s for s in spans if s.name == MARK]
    others = [s for s in spans if s.name != MARK]
    return [timeline(mark, others) for mark in marks]


def summary(replays: list[dict]) -> dict:
    """The median replay's timeline, and per event name the median us a call over all replays."""
    median = sorted(replays, key=lambda r: r["total_us"])[len(replays) // 2]
    names: dict[str, list[float]] = {}
    for replay in replays:
        per_name: dict[str, float] = {}
        for event in replay["events"]:
            per_name[event["name"]] = per_name.get(event["name"], 0.0) + event["us"]
        for name, us in per_name.items():
            names.setdefault(name, []).append(us)
    by_name = sorted(((name, statistics.median(v), len(v)) for name, v in names.items()), key=lambda t: -t[1])
    return {"median_replay": median,
            "own_us_median": round(statistics.median(r["own_us"] for r in replays), 2),
            "total_us_median": round(statistics.median(r["total_us"] for r in replays), 2),
            "by_name": [{"name": n, "us": round(us, 2), "replays": k} for n, us, k in by_name]}


def group_norm_baseline(args: tuple):
    """PyTorch's group_norm of a region entry's input, weight, bias, groups and eps (its first five arguments)."""
    x, weight, bias, groups, eps = args[:5]

    def run(*_):
        return torch.group_norm(x, groups, weight, bias, eps)
    return run


def entry_calls(module, inputs) -> list[tuple[str, tuple, object]]:
    """The extension entry points one forward of `module.ModelNew` runs, grad mode on: each one's name, arguments and
    output."""
    torch.manual_seed(0)
    model = module.ModelNew(*module.get_init_inputs()).cuda()
    recorder = Recorder(module._ext)
    module._ext = recorder
    try:
        model(*inputs)
    finally:
        module._ext = recorder.ext
    return [(name, args, out) for (name, args), out in zip(recorder.calls, recorder.outputs)]


def backward_replay(out):
    """The backward node an entry point gave its output, as a call with a fixed upstream gradient (its C++ apply:
    the backward entry point and the gradients' assembly), or None where the output has none."""
    if not isinstance(out, torch.Tensor) or out.grad_fn is None:
        return None
    node, grad = out.grad_fn, torch.randn_like(out)
    others = [None] * (len(node._input_metadata) - 1)   # a node of several outputs (native_group_norm's three)

    def run(*_):
        with torch.no_grad():   # as the engine runs a node outside create_graph
            return node(grad, *others)
    return run


def print_events(events: list[dict], indent: str) -> None:
    """A timeline's events, each with the gap before it, and those inside it indented below it."""
    end = 0.0
    for event in events:
        print(f"{indent}+{event['at_us']:7.2f} us (gap {event['at_us'] - end:6.2f})  {event['us']:7.2f} us  "
              f"{event['name'][:120]}")
        end = event["at_us"] + event["us"]
        if "inside" in event:
            print_events(event["inside"]["events"], indent + "    ")


def print_timeline(label: str, unprofiled: float, result: dict) -> None:
    print(f"== {label}: {unprofiled:.1f} us a call unprofiled; profiled median {result['total_us_median']} us, of "
          f"which {result['own_us_median']} us in no recorded call")
    print_events(result["median_replay"]["events"], "    ")
    print("  by name (median us a call): " + ", ".join(f"{r['name']} {r['us']}" for r in result["by_name"][:12]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("solution")
    parser.add_argument("--calls", type=int, default=40)
    parser.add_argument("--json")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("entry_timeline: no CUDA device", file=sys.stderr)
        return 3
    module = load(Path(args.solution).resolve(), "entry_timeline_solution")
    torch.manual_seed(0)
    inputs = [x.cuda().requires_grad_(x.is_floating_point()) if isinstance(x, torch.Tensor) else x
              for x in module.get_inputs()]
    report = {"solution": str(Path(args.solution).resolve()), "gpu": torch.cuda.get_device_name(),
              "torch": torch.__version__, "entries": []}
    for name, call_args, out in entry_calls(module, inputs):
        fn = getattr(module._ext, name)
        contenders = [(name, fn)]
        region = name.startswith("region") and name[len("region"):].isdigit()
        if region:
            contenders.append((f"{name} as torch.group_norm", group_norm_baseline(call_args)))
        backward = backward_replay(out)
        if backward is not None:
            contenders.append((f"{name}'s backward node", backward))
            if region:
                reference = group_norm_baseline(call_args)(*call_args)
                if reference.grad_fn is not None:
                    contenders.append((f"{name} as torch.group_norm, its backward node",
                                       backward_replay(reference)))
        for label, run in contenders:
            unprofiled = replay_us(run, call_args, args.calls)
            result = summary(profiled_replays(run, call_args, args.calls))
            print_timeline(label, unprofiled, result)
            report["entries"].append({"entry": label, "unprofiled_us": round(unprofiled, 2), **result})
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
