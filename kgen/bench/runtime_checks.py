"""Memory and build-once checks of emitted solutions (GPU), shared by the GPU tests
(tests/validate/test_reliability_gpu.py) and the reliability table (kgen.bench.reliability, section b).

  memory_check(path)        1,000 forward+backward iterations at a small shape (gradients set to None
                            each time): torch.cuda.memory_allocated() after iteration 10 must equal the
                            value after the last one
  build_once(path)          the same emitted file executed twice in one process: the second load does not
                            run ninja, is fast, and gets the same extension (the name carries the source hash)
  two_files(paths)          two different emitted files in one process: different extension names, and
                            each computes what the reference computes (forward and every gradient)
"""
from __future__ import annotations

import contextlib
import hashlib
import importlib.machinery
import importlib.util
import itertools
import subprocess
import sys
import time
from pathlib import Path

import torch

from kgen.header import parse_header
from kgen.specs import get_spec

_COUNTER = itertools.count()


def exec_file(path: Path, name: str | None = None):
    """Execute a solution file as a fresh module (a new module object every call)."""
    name = name or f"kgen_reliability_{Path(path).stem.replace('.', '_')}_{next(_COUNTER)}"
    loader = importlib.machinery.SourceFileLoader(name, str(path))
    spec = importlib.util.spec_from_file_location(name, str(path), loader=loader)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    loader.exec_module(module)
    return module


def small_problem(path: Path, batch: int = 2, spatial: int = 16) -> tuple[list, tuple, object]:
    """(init args, input shape, header) of an emitted file at a small shape (spec's channels and groups)."""
    header = parse_header(Path(path).read_text())
    spec = get_spec(header.spec)
    init = spec.init_args_for(header.params)
    shape = list(spec.input_shapes[0])
    shape[0] = batch
    shape[2:] = [min(d, spatial) for d in shape[2:]]
    return init, tuple(shape), header


def memory_check(path: Path, iterations: int = 1000, probe: int = 10) -> dict:
    module = exec_file(path)
    init, shape, _ = small_problem(path)
    torch.manual_seed(0)
    model = module.ModelNew(*init).cuda()
    x = torch.rand(shape, device="cuda", requires_grad=True)
    upstream = None
    at_probe = None
    torch.cuda.synchronize()
    started = time.monotonic()
    for i in range(1, iterations + 1):
        y = model(x)
        if upstream is None:
            upstream = torch.randn_like(y)
        y.backward(upstream)
        del y
        x.grad = None
        model.zero_grad(set_to_none=True)
        if i == probe:
            torch.cuda.synchronize()
            at_probe = torch.cuda.memory_allocated()
    torch.cuda.synchronize()
    at_end = torch.cuda.memory_allocated()
    return {"file": Path(path).name, "iterations": iterations, "allocated_at_probe": at_probe,
            "allocated_at_end": at_end, "probe": probe, "ok": at_probe == at_end,
            "seconds": time.monotonic() - started, "max_allocated": torch.cuda.max_memory_allocated()}


@contextlib.contextmanager
def count_ninja():
    """Counts ninja invocations by torch.utils.cpp_extension (its _run_ninja_build, or any subprocess.run
    of a command whose first word is ninja)."""
    import torch.utils.cpp_extension as cpp

    calls = []
    patched = []
    original_build = getattr(cpp, "_run_ninja_build", None)
    if original_build is not None:
        def counting_build(*args, **kwargs):
            calls.append("_run_ninja_build")
            return original_build(*args, **kwargs)
        cpp._run_ninja_build = counting_build
        patched.append(("_run_ninja_build", original_build))
    original_run = subprocess.run

    def counting_run(*args, **kwargs):
        command = args[0] if args else kwargs.get("args")
        first = command[0] if isinstance(command, (list, tuple)) and command else str(command or "").split(" ")[0]
        if Path(str(first)).name == "ninja":
            calls.append("subprocess ninja")
        return original_run(*args, **kwargs)
    subprocess.run = counting_run
    try:
        yield calls
    finally:
        subprocess.run = original_run
        for name, value in patched:
            setattr(cpp, name, value)


def source_digest(module) -> str:
    """The hash the emitted file puts in its extension's name (see kgen/templates/solution.py.j2)."""
    digest = hashlib.sha256((module.CPP_SOURCE + module.CUDA_SOURCE).encode()).hexdigest()[:16]
    return digest


def build_once(path: Path) -> dict:
    """Execute the same file twice in this process; the second load must reuse the build."""
    timings, ninja, names = [], [], []
    modules = []
    for _ in range(2):
        with count_ninja() as calls:
            started = time.monotonic()
            module = exec_file(path)
            timings.append(time.monotonic() - started)
        ninja.append(len(calls))
        names.append(module._ext.__name__)
        modules.append(module)
    digest = source_digest(modules[0])
    ok = (ninja[1] == 0 and timings[1] < 5.0 and names[0] == names[1] and names[0].endswith("_" + digest))
    return {"file": Path(path).name, "first_load_s": timings[0], "second_load_s": timings[1],
            "ninja_runs_first": ninja[0], "ninja_runs_second": ninja[1], "extension": names,
            "source_digest": digest, "ok": ok}


def _reference_for(header):
    spec = get_spec(header.spec)
    return exec_file(spec.reference_path(header.params), f"kgen_reliability_reference_{next(_COUNTER)}")


def two_files(paths: list[Path], atol: float = 1e-4, rtol: float = 1e-4) -> dict:
    """Different emitted files in one process: distinct extension names, each as correct as alone."""
    names, errors, oks = [], [], []
    for path in paths:
        module = exec_file(path)
        names.append(module._ext.__name__)
        init, shape, header = small_problem(path)
        reference = _reference_for(header)
        torch.manual_seed(0)
        new = module.ModelNew(*init).cuda()
        torch.manual_seed(0)
        ref = reference.Model(*init).cuda()
        x = torch.rand(shape, device="cuda")
        outs, grads = [], []
        for model in (new, ref):
            xi = x.clone().requires_grad_()
            y = model(xi)
            torch.manual_seed(1)
            y.backward(torch.randn_like(y))
            outs.append(y.detach())
            grads.append([xi.grad] + [p.grad for p in model.parameters()])
        pairs = [(outs[0], outs[1])] + list(zip(grads[0], grads[1]))
        err = max((float((a - b).abs().max()) for a, b in pairs
                   if a is not None and b is not None and a.shape == b.shape), default=float("nan"))
        oks.append(all(a is not None and b is not None and a.shape == b.shape
                       and torch.allclose(a, b, atol=atol, rtol=rtol) for a, b in pairs))
        errors.append(err)
    ok = len(set(names)) == len(names) and all(oks)
    return {"files": [Path(p).name for p in paths], "extensions": names, "max_err": errors, "correct": oks, "ok": ok}
