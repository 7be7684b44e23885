"""Memory and build-once checks of emitted solutions: kgen.bench.runtime_checks, under the name
tests/validate/test_reliability_gpu.py imports (`from benchmarks.reliability_checks import ...`)."""
from kgen.bench.runtime_checks import build_once, exec_file, memory_check, two_files  # noqa: F401
