"""Where the host time of a kgen step goes, below Python: torch.profiler (CPU and CUDA runtime activities) over N
no_grad forwards of a small solution, self CPU time by event (the ATen calls and CUDA runtime calls a kgen entry point
makes show under it), then the wall time of each of the solution's extension entry points called alone in a loop on
the inputs the forward gives them.

    python3 benchmarks/host_cost_profile.py SOLUTION REFERENCE [--calls N]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks.bench_problem import load  # noqa: E402
from benchmarks.host_overhead_probe import wall_us  # noqa: E402


def record_entry_points(ext) -> tuple[dict, dict]:
    """The solution's extension functions, each wrapped to record the arguments of its last call: (originals, seen)."""
    originals, seen = {}, {}
    for name in dir(ext):
        if name.startswith("_") or not callable(getattr(ext, name)):
            continue
        originals[name] = getattr(ext, name)

        def recording(*args, _fn=originals[name], _name=name):
            seen[_name] = args
            return _fn(*args)
        setattr(ext, name, recording)
    return originals, seen


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("solution")
    parser.add_argument("reference")
    parser.add_argument("--calls", type=int, default=300)
    args = parser.parse_args()
    ref_model, new_model, make_inputs = load(args.solution, args.reference, torch.device("cuda"))
    inputs = make_inputs()
    module = sys.modules[type(new_model).__module__]
    with torch.no_grad():
        print(f"kgen forward  {wall_us(lambda: new_model(*inputs), args.calls):8.1f} us")
        print(f"eager forward {wall_us(lambda: ref_model(*inputs), args.calls):8.1f} us")
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            for _ in range(args.calls):
                new_model(*inputs)
            torch.cuda.synchronize()
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=30, max_name_column_width=70))
    originals, seen = record_entry_points(module._ext)
    with torch.no_grad():
        new_model(*inputs)
        for name, call_args in sorted(seen.items()):
            fn = originals[name]
            print(f"{name:24s} alone {wall_us(lambda: fn(*call_args), args.calls):8.1f} us a call")
        x = next(t for t in inputs if isinstance(t, torch.Tensor))
        w = torch.ones(x.shape[1], device=x.device)
        print(f"{'F.group_norm':24s} alone {wall_us(lambda: torch.nn.functional.group_norm(x, 8, w, w), args.calls):8.1f} us a call")
        print(f"{'torch.sigmoid':24s} alone {wall_us(lambda: torch.sigmoid(x), args.calls):8.1f} us a call")
        print(f"{'torch.empty_like':24s} alone {wall_us(lambda: torch.empty_like(x), args.calls):8.1f} us a call")


if __name__ == "__main__":
    main()
