"""One solution timed against its reference eager and under torch.compile: kgen.bench.timing.

    python3 benchmarks/bench_problem.py SOLUTION REFERENCE [--json PATH] [--min-run-time S] [--copy-bytes N]
"""
import sys

from kgen.bench.timing import main

if __name__ == "__main__":
    sys.exit(main())
