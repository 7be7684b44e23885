"""Where the host time of one call of an emitted solution goes: kgen.bench.host_profile.

    python3 benchmarks/host_profile.py SOLUTION.py [--reference REF.py] [--calls 200] [--top 25] [--api]
        [--also NAME=PATH ...] [--json OUT]
"""
import sys

from kgen.bench.host_profile import main

if __name__ == "__main__":
    sys.exit(main())
