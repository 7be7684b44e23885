"""Build solution files' CUDA extensions in parallel, once: kgen.bench.prebuild.

    TORCH_EXTENSIONS_DIR=$PWD/.build/ext python3 benchmarks/prebuild.py [-j N] FILE... [emit:SPEC[:k=v,...]]...
"""
import sys

from kgen.bench.prebuild import emit_to_file, main  # noqa: F401  (emit_to_file: tests/validate/test_reliability_gpu.py)

if __name__ == "__main__":
    sys.exit(main())
