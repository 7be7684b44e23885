"""Inside each extension entry point of a solution, where the host time goes: kgen.bench.entry_timeline.

    python3 benchmarks/entry_timeline.py SOLUTION.py [--calls 40] [--json OUT]
"""
import sys

from kgen.bench.entry_timeline import main

if __name__ == "__main__":
    sys.exit(main())
