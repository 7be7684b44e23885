"""kgen.bench: the measurements behind benchmarks/, as a package the scripts there and the tests import.

    kgen.bench.family          the KernelBench GroupNorm family (or any folder of references) end to end (emit,
                               validate, KernelBench's evaluator, timings), and the merge of several runs into one
                               table
    kgen.bench.family_table    its table: verdicts, times, the host's time a call, the bytes each kernel must move
    kgen.bench.timing          one solution timed against eager and torch.compile in one process, the kernels
                               each contender launches, and the DRAM copy rate at a given size
    kgen.bench.prebuild        solution files' CUDA extensions built in parallel, once
    kgen.bench.families        the kernel families, each at a small shape where its kernels are the ones launched
    kgen.bench.reliability     the reliability table: numerics, families, memory and build-once, the validator on
                               adversarial files, compute-sanitizer
    kgen.bench.runtime_checks  memory and build-once checks of emitted solutions
    kgen.bench.sanitizer_logs  compute-sanitizer logs read and attributed to kernels (ours or a library's)

They run from a checkout (`pip install -e .`, or PYTHONPATH at the repository root): they read generated/,
tests/ and write under .build/. Importing this package imports neither torch nor anything else.
"""
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]   # the repository root
