"""Where the host time of one forward+backward call goes, thread by thread and function by function: torch.profiler
with its Python tracer (with_stack) over a few calls of an emitted solution and of its reference, then each thread's
events of the last call nested by time, and every event's SELF time (its duration less its children's): Python
functions, ATen ops, CUDA runtime calls. The autograd engine runs a CUDA backward on a thread of its own, so the table
shows what the backward costs there and how long the caller's thread waits for it.

    python3 benchmarks/host_timeline.py SOLUTION.py [--reference REF.py] [--calls 5] [--top 30] [--json OUT]

The profiler inflates every event's time (the Python tracer most); compare the contenders' rows with each other, not
with unprofiled timings (benchmarks/host_profile.py). Needs a CUDA device.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

import torch

from kgen.bench.host_profile import load


def step(model, inputs, grads) -> None:
    out = model(*inputs)
    outs = [o for o in (out if isinstance(out, (tuple, list)) else [out]) if isinstance(o, torch.Tensor)]
    torch.autograd.backward(outs, grads)


def trace_events(model, inputs, calls: int) -> list[dict]:
    """The chrome-trace events of the last of `calls` forward+backward calls (each call between markers)."""
    out = model(*inputs)
    grads = [torch.randn_like(o) for o in (out if isinstance(out, (tuple, list)) else [out]) if isinstance(o, torch.Tensor)]
    for _ in range(3):
        step(model, inputs, grads)
    torch.cuda.synchronize()
    activities = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=activities, with_stack=True) as prof:
        for i in range(calls):
            with torch.profiler.record_function(f"host_timeline_call_{i}"):
                step(model, inputs, grads)
            torch.cuda.synchronize()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "trace.json"
        prof.export_chrome_trace(str(path))
        events = json.loads(path.read_text())["traceEvents"]
    marker = next(e for e in events if e.get("name") == f"host_timeline_call_{calls - 1}" and e.get("ph") == "X")
    begin, end = marker["ts"], marker["ts"] + marker["dur"]
    # the last call's host events (its backward's too: the engine's thread ends before the call's marker does)
    return [e for e in events if e.get("ph") == "X" and "dur" in e and begin <= e["ts"] <= end
            and e.get("cat") in ("cpu_op", "python_function", "cuda_runtime", "cuda_driver", "user_annotation")
            and not e["name"].startswith("host_timeline_call_")]


def self_times(events: list[dict]) -> tuple[dict, dict]:
    """Per (category, name): calls and self us; per thread: the span and the busy time of its outermost events."""
    by_thread = defaultdict(list)
    for e in events:
        by_thread[e["tid"]].append(e)
    rows = defaultdict(lambda: [0, 0.0])
    threads = {}
    for tid, evs in by_thread.items():
        evs.sort(key=lambda e: (e["ts"], -e["dur"]))
        stack: list[list] = []   # [end, event, children's us]
        outer = 0.0

        def close(item):
            end_, ev, children = item
            key = (ev.get("cat"), ev["name"])
            rows[key][0] += 1
            rows[key][1] += max(ev["dur"] - children, 0.0)
            if stack:
                stack[-1][2] += ev["dur"]

        for e in evs:
            while stack and stack[-1][0] <= e["ts"]:
                close(stack.pop())
            if not stack:
                outer += e["dur"]
            stack.append([e["ts"] + e["dur"], e, 0.0])
        while stack:
            close(stack.pop())
        threads[tid] = {"events": len(evs), "span_us": round(max(e["ts"] + e["dur"] for e in evs) - evs[0]["ts"], 1),
                        "busy_us": round(outer, 1)}
    return rows, threads


def report(label: str, events: list[dict], top: int) -> dict:
    rows, threads = self_times(events)
    ranked = sorted(rows.items(), key=lambda kv: -kv[1][1])
    print(f"== {label}: {len(events)} host events in the last call")
    for tid, t in sorted(threads.items(), key=lambda kv: -kv[1]["busy_us"]):
        print(f"   thread {tid}: {t['events']} events, busy {t['busy_us']} us of a {t['span_us']} us span")
    total = sum(v[1] for v in rows.values())
    print(f"   self time, every thread: {total:.1f} us; the top {top}:")
    for (cat, name), (count, us) in ranked[:top]:
        print(f"  {us:9.1f} us  x{count:<3d} {cat:15s} {name[:100]}")
    return {"threads": threads, "self_us_total": round(total, 1),
            "top": [{"category": c, "name": n, "calls": k, "self_us": round(u, 1)} for (c, n), (k, u) in ranked[:top]]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("solution")
    parser.add_argument("--reference")
    parser.add_argument("--calls", type=int, default=5)
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--json")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("host_timeline: no CUDA device", file=sys.stderr)
        return 3
    solution = load(Path(args.solution).resolve(), "host_timeline_solution")
    contenders = {"kgen": solution.ModelNew}
    if args.reference:
        contenders["eager"] = load(Path(args.reference).resolve(), "host_timeline_reference").Model
    torch.manual_seed(0)
    inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in solution.get_inputs()]
    inputs = [x.requires_grad_(True) if isinstance(x, torch.Tensor) and x.is_floating_point() else x for x in inputs]
    result = {}
    for name, cls in contenders.items():
        torch.manual_seed(0)
        model = cls(*solution.get_init_inputs()).cuda()
        result[name] = report(name, trace_events(model, inputs, args.calls), args.top)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
