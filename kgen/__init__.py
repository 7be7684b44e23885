"""kgen: emit self-contained fused-CUDA solution files for KernelBench-style problems, then prove them.

The house, in the order data flows through it:
    kgen.specs      what a problem is: its reference, init args, and the parameters its templates take
    kgen.params     checking user parameters against a spec, before anything is written
    kgen.emit       spec + parameters -> Jinja templates (kgen/templates) -> one solution file
    kgen.header     the machine-readable header every emitted file starts with
    kgen.validate   static rules, then a sandboxed GPU run: equality with the reference, gradients, timing
    kgen.cli        the `kgen` command
"""

__version__ = "0.1.0"
