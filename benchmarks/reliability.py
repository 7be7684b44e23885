"""The reliability table on a GPU: kgen.bench.reliability (its docstring says what each section and verdict is).

    python3 benchmarks/reliability.py [--sections numerics,families,...] [--merge EARLIER.json] [--out MD] [--json J]

Run through `bash benchmarks/device_run.sh reliability` and `reliability-families`.
"""
import sys

from kgen.bench.reliability import main

if __name__ == "__main__":
    sys.exit(main())
