"""Where a small problem's forward spends its host time: cProfile of N forward calls (no_grad) of a solution, its
reference beside it, and the wall time per call of each (synchronised every N calls, so it is host-bound where the
GPU work is small).

    python3 benchmarks/host_overhead_probe.py SOLUTION REFERENCE [--calls N]
"""
from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks.bench_problem import load  # noqa: E402


def wall_us(fn, calls: int) -> float:
    """Wall time of one fn() in us: `calls` calls after 20 to warm up, synchronised only at the ends (host-bound
    where the GPU work is small)."""
    for _ in range(20):
        fn()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / calls * 1e6


def per_call_ms(model, inputs, calls: int) -> float:
    with torch.no_grad():
        return wall_us(lambda: model(*inputs), calls) / 1e3


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("solution")
    parser.add_argument("reference")
    parser.add_argument("--calls", type=int, default=500)
    args = parser.parse_args()
    ref_model, new_model, make_inputs = load(args.solution, args.reference, torch.device("cuda"))
    inputs = make_inputs()
    for name, model in (("kgen", new_model), ("eager", ref_model), ("kgen again", new_model)):
        print(f"{name:10s} {per_call_ms(model, inputs, args.calls):.4f} ms a forward")
    profile = cProfile.Profile()
    with torch.no_grad():
        profile.enable()
        for _ in range(args.calls):
            new_model(*inputs)
        torch.cuda.synchronize()
        profile.disable()
    text = io.StringIO()
    pstats.Stats(profile, stream=text).sort_stats("tottime").print_stats(25)
    print(text.getvalue())


if __name__ == "__main__":
    main()
