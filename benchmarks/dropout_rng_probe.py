"""Whether torch.compile's dropout draws the reference's random numbers, and what it costs when made to.

    python3 benchmarks/dropout_rng_probe.py SOLUTION REFERENCE [--json PATH]

For a reference with a dropout in training mode (KernelBench L2-83): the output of one forward under the same seed
from eager PyTorch, torch.compile (default: Inductor generates its own random numbers), torch.compile with
`torch._inductor.config.fallback_random = True` (Inductor calls PyTorch's random ops, so the masks are eager's) and
kgen's solution (the reference's own dropout call); max |difference| from eager and the share of elements that
differ. Then all four timed in one process (forward and forward+backward, kgen.validate.bench's method).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks.bench_problem import SEED, load  # noqa: E402
from kgen.validate.bench import time_compiled, time_contender  # noqa: E402


def output_under_seed(model, inputs: list) -> torch.Tensor:
    torch.manual_seed(SEED + 7)
    with torch.no_grad():
        return model(*inputs)


def compared(out: torch.Tensor, reference: torch.Tensor) -> dict:
    diff = (out - reference).abs()
    return {"max_abs_diff": diff.max().item(), "share_differing": (diff > 1e-4).float().mean().item()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("solution")
    parser.add_argument("reference")
    parser.add_argument("--json")
    parser.add_argument("--min-run-time", type=float, default=1.0)
    args = parser.parse_args()
    device = torch.device("cuda")
    ref_model, new_model, make_inputs = load(args.solution, args.reference, device)
    inputs = make_inputs()
    eager = output_under_seed(ref_model, inputs)
    result = {"outputs": {"eager again": compared(output_under_seed(ref_model, inputs), eager),
                          "kgen": compared(output_under_seed(new_model, inputs), eager)}}
    for name, fallback in (("compile", False), ("compile fallback_random", True)):
        torch._dynamo.reset()
        with torch._inductor.config.patch(fallback_random=fallback):
            compiled = torch.compile(ref_model)
            output_under_seed(compiled, inputs)   # compiles
            result["outputs"][name] = compared(output_under_seed(compiled, inputs), eager)
        del compiled
    print(json.dumps(result["outputs"], indent=1))
    with torch.no_grad():
        upstream = [torch.randn_like(eager)]
    times = {"kgen": time_contender(new_model, inputs, upstream, device, args.min_run_time),
             "eager": time_contender(ref_model, inputs, upstream, device, args.min_run_time)}
    for name, fallback in (("compile", False), ("compile fallback_random", True)):
        torch._dynamo.reset()
        with torch._inductor.config.patch(fallback_random=fallback):
            times[name] = time_compiled(ref_model, inputs, upstream, device, args.min_run_time)
    result["times"] = times
    for name, row in times.items():
        print(f"{name:26s} forward {row['forward'].get('ms', row['forward'])} ms, forward+backward "
              f"{row['forward_backward'].get('ms', row['forward_backward'])} ms")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
