"""The GroupNorm family at shapes its files were not emitted for: for each KernelBench problem, the emitted solution
validated (outputs and every gradient against the reference and float64, determinism) at a small odd input shape
derived from the problem's own: batch 3, every spatial dim 11 (kept where it is smaller), channels and the model's
init arguments unchanged; a (N, F) input becomes (7, F). Catches what only odd sizes exercise (scalar ends of
16-byte packs, short planes, windows the size does not divide) in the kernels each problem really uses.

    python3 benchmarks/family_other_shapes.py PROBLEMS_DIR SOLUTIONS_DIR OUT_DIR [--only 19 35 ...] [--emit]

SOLUTIONS_DIR holds p<N>.py per problem (L1-35 is p35); --emit writes them first with `kgen emit --ref`.
Writes OUT_DIR/other_shapes.json and one validate log a problem; prints a line a problem.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import re
import subprocess
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent


def problem_number(path: Path) -> str:
    return re.match(r"level\d+_(\d+)_", path.name).group(1)


def input_shapes(reference: Path) -> list:
    """get_inputs()'s tensor shapes, made on the meta device (no memory: L1-35's input is 7.5 GB)."""
    spec = importlib.util.spec_from_file_location(f"shape_probe_{reference.stem}", reference)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with torch.device("meta"):
        inputs = module.get_inputs()
    return [list(t.shape) for t in inputs if isinstance(t, torch.Tensor)]


def small_odd(shape: list) -> list:
    if len(shape) == 2:
        return [7, shape[1]]
    return [3, shape[1]] + [min(11, s) for s in shape[2:]]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("problems", type=Path)
    parser.add_argument("solutions", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--only", nargs="*", default=None)
    parser.add_argument("--emit", action="store_true")
    parser.add_argument("--timeout", type=int, default=240)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    results = {}
    for reference in sorted(args.problems.glob("level*_*.py")):
        n = problem_number(reference)
        if args.only and n not in args.only:
            continue
        solution = args.solutions / f"p{n}.py"
        if args.emit:
            subprocess.run([sys.executable, "-m", "kgen.cli", "emit", "--ref", str(reference), "-o", str(solution)],
                           check=True, cwd=ROOT)
        shapes = [small_odd(s) for s in input_shapes(reference)]
        command = [sys.executable, "-m", "kgen.cli", "validate", str(solution), "--trials", "2",
                   "--timeout", str(args.timeout)]
        for shape in shapes:
            command += ["--input-shape", json.dumps(shape)]
        start = time.time()
        done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
        log = args.out / f"other_shapes_{n}.log"
        log.write_text(done.stdout + done.stderr)
        verdict = next((line for line in done.stdout.splitlines() if line.startswith("RESULT")), "no RESULT line")
        results[n] = {"shapes": shapes, "exit": done.returncode, "verdict": verdict,
                      "seconds": round(time.time() - start, 1)}
        print(f"L-{n:>3} {json.dumps(shapes):28s} exit {done.returncode}  {verdict[:110]}", flush=True)
    (args.out / "other_shapes.json").write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
