"""One emitted solution at a small shape, forward + backward, for compute-sanitizer to watch.

    PYTHONPATH=. python3 benchmarks/sanitize.py generated/FILE.py      (run by benchmarks/sanitize.sh)

Builds ModelNew with the file's init arguments (its kgen header names the spec and parameters) on an
input of batch 2 and spatial size <= 16 that keeps the spec's channels and groups, runs the forward,
then the backward with a random upstream gradient, and synchronises; prints one line. Exit status 0
when everything ran and every output and gradient is finite, 1 otherwise (the sanitizer's own verdict
comes through its --error-exitcode).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

from benchmarks.reliability_checks import exec_file
from kgen.header import parse_header
from kgen.specs import get_spec

SPATIAL = 16


def small_problem(spec_name: str, params: dict, batch: int = 2, spatial: int = SPATIAL) -> tuple[list, tuple]:
    """Init args and a small input shape, keeping the spec's channel and group structure."""
    spec = get_spec(spec_name)
    init = spec.init_args_for(params)
    shape = list(spec.input_shapes[0])
    shape[0] = batch
    shape[2:] = [min(d, spatial) for d in shape[2:]]
    return init, tuple(shape)


def load_solution(path: Path):
    return exec_file(path, "sanitized_" + path.stem.replace(".", "_"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file")
    parser.add_argument("--spatial", type=int, default=SPATIAL)
    args = parser.parse_args()
    path = Path(args.file)
    header = parse_header(path.read_text())
    init, shape = small_problem(header.spec, header.params, spatial=args.spatial)
    started = time.monotonic()
    module = load_solution(path)
    loaded = time.monotonic()
    torch.manual_seed(0)
    model = module.ModelNew(*init).cuda()
    x = torch.rand(shape, device="cuda", requires_grad=True)
    y = model(x)
    torch.cuda.synchronize()
    upstream = torch.randn_like(y)
    y.backward(upstream)
    torch.cuda.synchronize()
    grads = {"input": x.grad, **{n: p.grad for n, p in model.named_parameters()}}
    missing = [n for n, g in grads.items() if g is None]
    nonfinite = [n for n, g in grads.items() if g is not None and not bool(torch.isfinite(g).all())]
    if not bool(torch.isfinite(y).all()):
        nonfinite.insert(0, "output")
    print(f"sanitize.py {path.name}: init {init}, input {list(shape)} -> output {list(y.shape)}; "
          f"{len(grads) - len(missing)} gradients; load {loaded - started:.1f} s, run {time.monotonic() - loaded:.1f} s"
          + (f"; NO GRADIENT: {missing}" if missing else "") + (f"; NOT FINITE: {nonfinite}" if nonfinite else ""),
          flush=True)
    return 1 if missing or nonfinite else 0


if __name__ == "__main__":
    sys.exit(main())
