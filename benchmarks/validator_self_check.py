"""kgen's validator on references judged against themselves: each reference's own Model as its solution
(`ModelNew = Model`), a correct file by definition, run through every runtime check (trials, gradients, float64,
the degenerate-output guard) on the CPU. A check that fails here is the validator's doing (or the reference's
own: a nondeterministic op), never the solution's, so every reference must PASS.

    python3 benchmarks/validator_self_check.py OUT_DIR REF.py [REF.py ...] [--trials 2] [--timeout 300]

Writes OUT_DIR/self_check.json (each reference's exit code and failed checks) and prints one line a reference;
exit status 1 when any reference is not PASS. Runs where no GPU is (about 7 s a small reference on 2 cores).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from kgen.validate.checks import EXIT_PASS, exit_code
from kgen.validate.runtime import run_child


def self_check(reference: Path, solutions: Path, trials: int, timeout: float) -> dict:
    """The runtime checks of `reference` against a solution that is its own Model."""
    solution = solutions / reference.name
    solution.write_text(reference.read_text() + "\n\nModelNew = Model\n")
    config = {"device": "cpu", "trials": trials, "atol": 1e-4, "rtol": 1e-4, "backward": True, "bench": False,
              "init_args": None, "input_shapes": None, "solution": str(solution), "reference": str(reference)}
    start = time.time()
    result = run_child(config, timeout)
    return {"reference": str(reference), "exit": exit_code(result.checks, result.ran),
            "seconds": round(time.time() - start, 1),
            "failed": [f"{c.name}: {c.detail[:400]}" for c in result.checks if c.ok is False]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out")
    parser.add_argument("references", nargs="+")
    parser.add_argument("--trials", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=300)
    args = parser.parse_args()
    out = Path(args.out)
    (out / "solutions").mkdir(parents=True, exist_ok=True)
    rows = []
    for reference in args.references:
        row = self_check(Path(reference).resolve(), out / "solutions", args.trials, args.timeout)
        rows.append(row)
        print(f"{Path(reference).stem}: exit {row['exit']} ({row['seconds']} s)"
              + "".join(f"\n    {line}" for line in row["failed"]), flush=True)
    (out / "self_check.json").write_text(json.dumps(rows, indent=1))
    bad = [r for r in rows if r["exit"] != EXIT_PASS]
    print(f"{len(rows) - len(bad)} of {len(rows)} references PASS against themselves")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
