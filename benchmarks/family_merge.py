"""One family table from several runs of benchmarks/family.py: kgen.bench.family.merge.

    python3 benchmarks/family_merge.py OUT RUN_DIR [RUN_DIR ...]
"""
import sys

from kgen.bench.family import merge_main

if __name__ == "__main__":
    sys.exit(merge_main())
