"""The timing process of `kgen tune`: every candidate that passed kgen validate, the reference eager and
torch.compile(reference), forward and forward+backward, in ONE process on one GPU (timings compare only within a
run), the way `kgen validate --bench` times them (kgen.validate.bench.time_contender: blocked_autorange medians).
The candidates are timed in rounds, each round in another order, and each one's median over the rounds kept: the
GPU's clocks and the host drift between the first and the last of them.

    python3 -m kgen.tune.timing REFERENCE --json OUT [--precision fp32|fp16|bf16] [--rounds N] [--init-args JSON]
                                SOLUTION...
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import torch

from kgen.bench.timing import DTYPES, SEED
from kgen.validate.bench import time_compiled, time_contender
from kgen.validate.context import import_file

MODES = ("forward", "forward_backward")


def models(reference: str, solutions: list[str], dtype: torch.dtype, device: torch.device, init_args=None):
    """The reference Model and each solution's ModelNew from the same seed (from `init_args`, else the reference's
    get_init_inputs()), and the reference's inputs."""
    ref_mod = import_file(reference, "tune_reference")
    init = list(ref_mod.get_init_inputs()) if init_args is None else list(init_args)
    torch.manual_seed(SEED)
    ref_model = ref_mod.Model(*init).to(device=device, dtype=dtype)
    news = []
    for k, path in enumerate(solutions):
        torch.manual_seed(SEED)
        news.append(import_file(path, f"tune_candidate_{k}").ModelNew(*init).to(device=device, dtype=dtype))
    torch.manual_seed(SEED + 1)
    inputs = [x.to(device=device, dtype=dtype if x.is_floating_point() else x.dtype)
              if isinstance(x, torch.Tensor) else x for x in ref_mod.get_inputs()]
    return ref_model, news, inputs


def ms_of(times: dict) -> dict:
    """{mode: ms or None, "error": the first mode's error or None} of one time_contender result."""
    errors = [times[mode]["error"] for mode in MODES if "error" in times.get(mode, {})]
    return {**{mode: times.get(mode, {}).get("ms") for mode in MODES}, "error": errors[0] if errors else None}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("reference")
    parser.add_argument("solutions", nargs="+")
    parser.add_argument("--json", required=True)
    parser.add_argument("--precision", choices=sorted(DTYPES), default="fp32")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--min-run-time", type=float, default=0.3)
    parser.add_argument("--init-args", type=json.loads, default=None, help="JSON list: Model's arguments")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("kgen tune: no CUDA device", file=sys.stderr)
        return 3
    device = torch.device("cuda")
    ref_model, news, inputs = models(args.reference, args.solutions, DTYPES[args.precision], device, args.init_args)
    with torch.no_grad():
        out = ref_model(*inputs)
    upstream = [torch.randn_like(o) for o in (out if isinstance(out, (tuple, list)) else [out])
                if isinstance(o, torch.Tensor)]
    rounds: list[list[dict]] = [[] for _ in news]
    for r in range(args.rounds):
        order = list(range(len(news)))
        order = order[r % len(order):] + order[:r % len(order)]   # each round starts at another candidate
        for k in order:
            rounds[k].append(ms_of(time_contender(news[k], inputs, upstream, device, args.min_run_time)))
            print(f"kgen tune: timed candidate {k + 1} of {len(news)}, round {r + 1} of {args.rounds}",
                  file=sys.stderr, flush=True)
    result = {"gpu": torch.cuda.get_device_name(device), "torch": torch.__version__, "precision": args.precision,
              "candidates": [{**{mode: _median([t[mode] for t in per]) for mode in MODES},
                              "error": next((t["error"] for t in per if t["error"]), None)} for per in rounds],
              "rounds": rounds,
              "eager": ms_of(time_contender(ref_model, inputs, upstream, device, args.min_run_time)),
              "compile": ms_of(time_compiled(ref_model, inputs, upstream, device, args.min_run_time))}
    Path(args.json).write_text(json.dumps(result, indent=1))
    return 0


def _median(values: list) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


if __name__ == "__main__":
    sys.exit(main())
