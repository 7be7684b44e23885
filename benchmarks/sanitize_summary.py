"""Summarise a benchmarks/sanitize.sh log directory, one line per (target, tool) run: kgen.bench.sanitizer_logs.

    python3 benchmarks/sanitize_summary.py LOGDIR        (writes LOGDIR/summary.txt and prints it)
"""
import sys

from kgen.bench.sanitizer_logs import main

if __name__ == "__main__":
    sys.exit(main())
