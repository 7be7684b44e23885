"""Build solution files' CUDA extensions in parallel, once: kgen.bench.prebuild.

    TORCH_EXTENSIONS_DIR=$PWD/.build/ext python3 benchmarks/prebuild.py [-j N] FILE... [emit:SPEC[:k=v,...]]...
"""
import sys

from kgen.bench.prebuild import main

if __name__ == "__main__":
    sys.exit(main())
