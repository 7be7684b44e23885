"""The KernelBench GroupNorm family end to end, timed: kgen.bench.family (its docstring is the manual).

    python3 benchmarks/family.py PROBLEMS_DIR KB_DIR OUT_DIR [--bench] [--only 19,92] [--emit-args "--conv fast"]
"""
from kgen.bench.family import main

if __name__ == "__main__":
    main()
