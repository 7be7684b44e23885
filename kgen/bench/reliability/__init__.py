"""Reliability tables, on a GPU: RELIABILITY.md and (--json) the same as JSON.

    python3 benchmarks/reliability.py [--out RELIABILITY.md] [--json out.json]
        [--sanitize-dir .build/sanitize] [--sections numerics,families,memory,validator,sanitizer,family_sanitizer]
        [--families NAME,...] [--budget SECONDS] [--merge earlier.json] [--no-huge]

Sections (each written to the file as soon as it is done, so a time limit leaves what was found; --merge keeps
the sections of an earlier JSON that this run does not produce, and the table says where they ran):
 (a) numerics: every golden file in generated/ x every case below. The solution, its reference and a
     float64 copy of the reference run forward AND backward on the same input and upstream gradient; the
     output and EVERY gradient (input and parameters) is compared:
       PASS       each tensor agrees with the reference within the file's tolerance (1e-4; 1e-2 for
                  --conv fast, whose header says it is not equivalent at 1e-4), or is no more than twice as
                  far from float64 as the reference is (+ tol: a TF32 reference is itself ~3e-3 off);
                  NaN/Inf exactly where the reference (or float64) has them; --conv fused (kgen's TF32
                  convolution, where cuDNN's reference runs float32 at small shapes): within 1e-2 of float64,
                  parameter gradients within 3e-2 of float64 times max(1, their largest magnitude)
       WRONG      anything else: a different answer, a NaN/Inf pattern that is neither the reference's nor
                  float64's, a wrong shape, a missing gradient (the cell that must never appear)
       CRASH      the solution raised on valid input (message recorded)
       RAISES-OK  invalid input: the solution raised, and so does the reference (message recorded)
       REFUSED    the reference accepts this input, the solution raises a clear error instead
       ACCEPTED   invalid input the reference rejects but the solution accepted (a failure)
 (a2) families: every kernel family of kgen.bench.families (its emitted file in .build/families/,
     emitted here if missing, at the small shape where the host code launches the family's kernels): the same
     judge on random, normal and NaN-poisoned inputs, then the launch check:
       LAUNCHED      every kernel of the family is among those torch.profiler saw in one forward + backward
                     and one forward under no_grad
       NOT LAUNCHED  "family kernels not launched": the shape took another path (a failure)
 (b) memory and build-once: 1,000 forward+backward iterations per golden file (memory_allocated after
     iteration 10 == after 1,000); the same file executed twice in one process (no ninja run, < 5 s, same
     extension); two different emitted files in one process (different extensions, both correct);
     kgen.bench.runtime_checks
 (c) validator: every adversarial file of tests/validate/adversarial.py (static files: static verdicts;
     runtime files: the runner child on "cuda"; GPU files: the whole validate()) -> expected and observed
     exit code, seconds, leftover processes
 (d) sanitizer: the runs of benchmarks/sanitize.sh on files found in --sanitize-dir (its runs.tsv and logs)
 (d2) family_sanitizer: its runs on the families (targets family:NAME), with their probes
Verdicts that explain a sanitizer report not about kgen's kernels, each only with its evidence from the same run:
LIBRARY-WRITES (initcheck does not see cuDNN's writes), BULK-STORES (nor Hopper bulk stores'); PROBE: a probe's
run. NOT RUN: what the time budget (--budget, or the step's timeout) did not reach.
Exit status 1 if any cell is a failure (WRONG, CRASH, ACCEPTED, NOT LAUNCHED, memory growth, a build reused
wrongly, a validator verdict other than expected or a leftover process, a sanitizer run not clean, NOT RUN).
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from kgen.bench.reliability.common import set_budget
from kgen.bench.reliability.families import family_rows
from kgen.bench.reliability.memory import build_rows, memory_rows
from kgen.bench.reliability.numerics import numerics_rows
from kgen.bench.reliability.report import META, SECTIONS, environment, failures, render
from kgen.bench.reliability.sanitizer import family_sanitizer_rows, sanitizer_rows
from kgen.bench.reliability.validator import validator_rows

# (also what the tests and scripts take from the package as a whole: TF32, judge, invalid_row, BULK_STORE...)
from kgen.bench.reliability.common import TF32, compare_tensor, judge, judge_mode, tolerance_for  # noqa: F401
from kgen.bench.reliability.numerics import invalid_row  # noqa: F401
from kgen.bench.reliability.sanitizer import (  # noqa: F401
    BULK_STORE, bulk_stores_explained, family_reports_explained)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="RELIABILITY.md")
    parser.add_argument("--json")
    parser.add_argument("--sanitize-dir", type=Path, help="a benchmarks/sanitize.sh log directory")
    parser.add_argument("--sections", default="numerics,families,memory,validator,sanitizer,family_sanitizer")
    parser.add_argument("--families", help="comma-separated family names (default: every family)")
    parser.add_argument("--iterations", type=int, default=1000, help="memory check iterations (default 1000)")
    parser.add_argument("--no-huge", action="store_true", help="skip the > 2^31-element GroupNorm case")
    parser.add_argument("--budget", type=float, help="seconds: no new file or family is started after this long "
                                                     "(what was not reached is NOT RUN); the table is written as it grows")
    parser.add_argument("--merge", type=Path, help="start from the sections of an earlier --json output (e.g. add "
                                                   "the sanitizer section once sanitize.sh has finished)")
    args = parser.parse_args()
    set_budget(args.budget)
    wanted = [s.strip().replace("-", "_") for s in args.sections.split(",") if s.strip()]
    unknown = set(wanted) - set(SECTIONS)
    if unknown:
        parser.error(f"unknown sections {sorted(unknown)}")
    only = {n.strip() for n in args.families.split(",")} if args.families else None
    sections: dict = {}
    if args.merge is not None and args.merge.exists():
        merged = json.loads(args.merge.read_text())
        sections = {k: v for k, v in merged.items() if k not in wanted and k != META}
        sections[META] = {k: merged.get(META, {}).get(k, f"another run, merged from {args.merge}")
                          for k in sections}

    def write() -> None:
        ordered = {name: sections[name] for name in SECTIONS if name in sections}
        ordered[META] = sections.get(META, {})
        Path(args.out).write_text(render(ordered))
        if args.json:
            Path(args.json).write_text(json.dumps(ordered, indent=1, default=repr))

    def growing(name):
        return lambda rows: (sections.__setitem__(name, rows), write())

    producers = {"numerics": lambda: numerics_rows(not args.no_huge),
                 "families": lambda: family_rows(growing("families"), only),
                 "memory": lambda: memory_rows(args.iterations) + build_rows(),
                 "validator": lambda: validator_rows(growing("validator")),
                 "sanitizer": lambda: sanitizer_rows(args.sanitize_dir),
                 "family_sanitizer": lambda: family_sanitizer_rows(args.sanitize_dir)}
    sections.setdefault(META, {})
    for name in SECTIONS:
        if name in wanted:
            sections[META][name] = environment()
            sections[name] = producers[name]()
            write()   # after every section: a time limit leaves what was found
    bad = failures(sections)
    rows = sum(len(r) for name, r in sections.items() if name != META)
    print(f"reliability: {rows} rows, {bad} failing; wrote {args.out}", flush=True)
    return 1 if bad else 0
