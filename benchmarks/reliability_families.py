"""The kernel families, each at a small shape where its kernels are the ones launched: kgen.bench.families.

    python3 benchmarks/reliability_families.py emit|targets|table|files|probes [NAME...] [-j N]
"""
import sys

from kgen.bench.families import main

if __name__ == "__main__":
    sys.exit(main())
