"""kgen.validate: prove a solution file equal to its reference (and, with bench=True, time it).

    validate(path, ...) -> exit code      core.py       the whole run and its report
    static_checks(source, ref_source)     static.py     rules checked without running anything
    python -m kgen.validate.runner CFG    runner.py     the runtime checks, in a child process (CUDA), stage
                                                        by stage (stages/: setup, kernelbench, trials,
                                                        determinism, fp64, kernels; context.py: what they share)
    runtime.py, process.py, progress.py                 spawning that child safely (timeout, process group),
                                                        following its progress on stderr
    report.py, verdicts.py                              the report; KernelBench's verdict beside kgen's
    numerics.py, bench.py, checks.py                    comparisons and the noise model of each dtype, timing, the
                                                        Check record
    arguments.py                                        the command line's arguments, --precision and --autocast

Every runtime check and the timings run at the run's precision: float32 by default, the models and floating
inputs moved to float16 or bfloat16 (precision=), or every forward under torch.autocast (autocast=); and in the
run's layout: as constructed, or with 4-d and 5-d tensors channels-last (channels_last=; KernelBench's protocol
stays as constructed).
"""
from kgen.validate.checks import (EXIT_BROKEN, EXIT_FAIL, EXIT_NO_CUDA, EXIT_PASS, NOT_RUN_NO_CUDA, Check)
from kgen.validate.core import validate
from kgen.validate.static import static_checks

__all__ = ["validate", "static_checks", "Check", "EXIT_PASS", "EXIT_FAIL", "EXIT_BROKEN", "EXIT_NO_CUDA",
           "NOT_RUN_NO_CUDA"]
