"""One emitted solution at a small shape, forward + backward + a forward under no_grad, for compute-sanitizer.

    python3 benchmarks/sanitize.py generated/FILE.py        (run by benchmarks/sanitize.sh)
    python3 benchmarks/sanitize.py family:NAME [--probe library-writes|bulk-store]
    python3 benchmarks/sanitize.py TARGET --precision bf16|fp16   (the model and the inputs in that dtype)

A file: ModelNew with the file's init arguments (its kgen header names the spec and parameters) on an input of
batch 2 and spatial size <= 16 that keeps the spec's channels and groups. A target family:NAME: the family's
emitted file (.build/families/, kgen.bench.families) with its init arguments and input shapes.
Runs the forward, the backward with a random upstream gradient, then a forward under no_grad, and synchronises;
prints one line. Exit status 0 when everything ran and every output and gradient is finite, 1 otherwise (the
sanitizer's own verdict comes through its --error-exitcode).

Probes (evidence for kgen.bench.reliability's explained verdicts, family targets only):
  reference       the same run with the family's reference Model (PyTorch alone, no kgen kernel) in place of
                  ModelNew: under initcheck, what a library kernel reports there is the library's own
  library-writes  the same run with every output of a library convolution or Linear (and the gradient it returns)
                  copied by a PyTorch kernel before a kgen kernel reads it: under initcheck, which does not see
                  cuDNN's writes nor cuBLAS's bulk stores, a report then names no kgen kernel unless one of ours
                  reads memory nothing wrote
  bulk-store      (no sanitizer) the forward's output in memory first filled with NaN (the caching allocator
                  hands the output that block), read back by a PyTorch kernel: exit 0 when no NaN is left and the
                  output equals the reference's within 1e-4, under no_grad and with autograd alike
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import torch

from kgen.bench.families import family, is_target, source_of
from kgen.bench.runtime_checks import exec_file
from kgen.header import parse_header
from kgen.specs import get_spec

SPATIAL = 16
ROOT = Path(__file__).resolve().parent.parent   # the repository root
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
# the library calls whose outputs the library-writes probe copies: cuDNN's convolutions, and cuBLAS's GEMMs
# (whose Hopper kernels store their half-precision results with TMA bulk stores, which initcheck does not see)
LIBRARY_OPS = ("conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "linear")


def small_problem(spec_name: str, params: dict, batch: int = 2, spatial: int = SPATIAL) -> tuple[list, tuple]:
    """Init args and a small input shape, keeping the spec's channel and group structure."""
    spec = get_spec(spec_name)
    init = spec.init_args_for(params)
    shape = list(spec.input_shapes[0])
    shape[0] = batch
    shape[2:] = [min(d, spatial) for d in shape[2:]]
    return init, tuple(shape)


def load_solution(path: Path):
    return exec_file(path, "sanitized_" + path.stem.replace(".", "_"))


def problem(target: str, spatial: int) -> tuple[Path, list, list]:
    """(file, init args, input shapes) of a file or a family:NAME target."""
    if is_target(target):
        f = family(target)
        return source_of(f).path, list(f.init), [tuple(s) for s in f.inputs]
    path = Path(target)
    header = parse_header(path.read_text())
    init, shape = small_problem(header.spec, header.params, spatial=spatial)
    return path, init, [shape]


class _CopiedByPyTorch(torch.autograd.Function):
    """x copied by a PyTorch kernel, and so its gradient: what a kgen kernel reads next was written by PyTorch."""

    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        return grad.clone()


class _LibraryOutputsCopied:
    """torch.nn.functional with every convolution's and Linear's input gradient and output copied by PyTorch
    (the library-writes probe puts it in place of the solution module's `F`)."""

    def __getattr__(self, name):
        function = getattr(torch.nn.functional, name)
        if name not in LIBRARY_OPS:
            return function

        def copied(input, *args, **kwargs):
            return _CopiedByPyTorch.apply(function(_CopiedByPyTorch.apply(input), *args, **kwargs))

        return copied


def bulk_store_probe(model, reference, inputs: list) -> tuple[bool, str]:
    """The forward's output in a NaN-filled block, read back by PyTorch; every value written and equal to the
    reference's (1e-4), under no_grad and with autograd."""
    with torch.no_grad():
        want = reference(*inputs)
    report = []
    ok = True
    for grad in (False, True):
        with torch.set_grad_enabled(grad):
            shape = model(*inputs).shape
            poison = torch.full(shape, math.nan, device="cuda")
            block = poison.data_ptr()
            del poison   # the output gets this block back
            y = model(*inputs)
            reused = y.data_ptr() == block
            read = (y * 1.0).detach()   # a PyTorch kernel reads every value
            torch.cuda.synchronize()
        unwritten = int(torch.isnan(read).sum())
        err = float((read - want).abs().max())
        ok = ok and reused and unwritten == 0 and err <= 1e-4
        report.append(f"{'autograd' if grad else 'no_grad'}: NaN block reused {reused}, {unwritten} of {read.numel()} "
                      f"values still NaN, max |y - reference| {err:.2e}")
        del y, read
    return ok, "; ".join(report)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", help="a solution file, or family:NAME")
    parser.add_argument("--spatial", type=int, default=SPATIAL)
    parser.add_argument("--probe", choices=["reference", "library-writes", "bulk-store"])
    parser.add_argument("--precision", choices=list(DTYPES), default="fp32",
                        help="the model's parameters and the inputs in this dtype, as KernelBench's --precision")
    args = parser.parse_args()
    if args.probe == "bulk-store" and args.precision != "fp32":
        parser.error("the bulk-store probe runs at fp32 (it compares with the reference at 1e-4)")
    dtype = DTYPES[args.precision]
    if args.probe and not is_target(args.file):
        parser.error("--probe takes a family:NAME target")
    path, init, shapes = problem(args.file, args.spatial)
    name = args.file if is_target(args.file) else path.name
    started = time.monotonic()
    module = load_solution(path)
    loaded = time.monotonic()
    if args.probe == "library-writes":
        if not hasattr(module, "F"):
            print(f"sanitize.py {name}: the solution calls no torch.nn.functional convolution (no F): no probe")
            return 2
        module.F = _LibraryOutputsCopied()
    torch.manual_seed(0)
    if args.probe == "reference":
        model = exec_file(ROOT / source_of(family(args.file)).reference, "sanitized_reference").Model(*init).cuda()
    else:
        model = module.ModelNew(*init).cuda()
    model = model.to(dtype)
    inputs = [torch.rand(s, device="cuda", dtype=dtype) for s in shapes]
    if args.probe == "bulk-store":
        reference_path = ROOT / source_of(family(args.file)).reference
        reference_module = exec_file(reference_path, "sanitized_reference")
        torch.manual_seed(0)
        reference = reference_module.Model(*init).cuda().to(dtype)
        ok, report = bulk_store_probe(model, reference, inputs)
        print(f"sanitize.py {name} bulk-store probe: {report}; {'every value written' if ok else 'NOT SHOWN'}",
              flush=True)
        return 0 if ok else 1
    for x in inputs:
        x.requires_grad_()
    y = model(*inputs)
    torch.cuda.synchronize()
    upstream = torch.randn_like(y)
    y.backward(upstream)
    torch.cuda.synchronize()
    with torch.no_grad():
        y_no_grad = model(*inputs)
    torch.cuda.synchronize()
    grads = {("input" if len(inputs) == 1 else f"input {i}"): x.grad for i, x in enumerate(inputs)}
    grads.update({n: p.grad for n, p in model.named_parameters()})
    missing = [n for n, g in grads.items() if g is None]
    nonfinite = [n for n, g in grads.items() if g is not None and not bool(torch.isfinite(g).all())]
    for label, out in (("output", y), ("no_grad output", y_no_grad)):
        if not bool(torch.isfinite(out).all()):
            nonfinite.insert(0, label)
    shown = ", ".join(str(list(s)) for s in shapes)
    at = "" if args.precision == "fp32" else f" at {args.precision}"
    print(f"sanitize.py {name}{at}{' (' + args.probe + ' probe)' if args.probe else ''}: init {init}, input {shown} -> "
          f"output {list(y.shape)}; {len(grads) - len(missing)} gradients; load {loaded - started:.1f} s, "
          f"run {time.monotonic() - loaded:.1f} s"
          + (f"; NO GRADIENT: {missing}" if missing else "") + (f"; NOT FINITE: {nonfinite}" if nonfinite else ""),
          flush=True)
    return 1 if missing or nonfinite else 0


if __name__ == "__main__":
    sys.exit(main())
