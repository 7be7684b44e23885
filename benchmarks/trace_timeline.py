"""Where the wall time of one forward (and forward+backward) goes: GPU kernels in launch order, idle gaps
between them, and the CUDA runtime calls the host made (cudaMalloc, synchronisations, ...).

    python3 benchmarks/trace_timeline.py generated/convt_gelu_groupnorm.py [--reference]

Where a call's wall time exceeds the sum of its kernels: a host-side cause (an allocation, a synchronising call)
shows in the runtime-call list, a GPU-side one in the kernel timeline (which kernel, which idle interval).
--reference traces the file's reference the same way, beside it.
"""
from __future__ import annotations

import argparse
import importlib.util
from collections import Counter

import torch


def load(path: str, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def timeline(fn, label: str, iterations: int = 3) -> None:
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iterations):
        fn()
    stop.record()
    torch.cuda.synchronize()
    wall = start.elapsed_time(stop) / iterations
    acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=acts) as prof:
        fn()
        torch.cuda.synchronize()
    gpu, runtime = [], Counter()
    runtime_ms = Counter()
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            gpu.append((e.time_range.start / 1e3, e.time_range.end / 1e3, e.name))
        elif e.name.startswith("cuda") or e.name.startswith("cu"):
            runtime[e.name] += 1
            runtime_ms[e.name] += e.time_range.elapsed_us() / 1e3
    gpu.sort()
    busy = sum(end - begin for begin, end, _ in gpu)
    print(f"\n=== {label}: wall {wall:.3f} ms per call (CUDA events, {iterations} calls); "
          f"kernels sum {busy:.3f} ms; first-to-last span {gpu[-1][1] - gpu[0][0]:.3f} ms" if gpu else label)
    t0 = gpu[0][0] if gpu else 0.0
    previous_end = t0
    for begin, end, name in gpu:
        gap = begin - previous_end
        print(f"  {begin - t0:8.3f} ms  {end - begin:7.3f} ms  idle-before {gap:6.3f}  {name[:110]}")
        previous_end = max(previous_end, end)
    print("  host CUDA runtime calls (count, total ms):")
    for name, count in runtime.most_common():
        print(f"    {count:4d}  {runtime_ms[name]:8.3f}  {name}")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("solution")
    parser.add_argument("--reference", action="store_true", help="also trace the reference Model (eager)")
    args = parser.parse_args()
    module = load(args.solution, "traced_solution")
    torch.manual_seed(0)
    init = module.get_init_inputs()
    model = module.ModelNew(*init).cuda()
    torch.manual_seed(1)
    inputs = [t.cuda() for t in module.get_inputs()]
    models = [("ModelNew", model)]
    if args.reference:
        from kgen.header import parse_header
        from kgen.specs import get_spec

        header = parse_header(open(args.solution).read())
        reference = load(str(get_spec(header.spec).reference_path(header.params)), "traced_reference")
        models.append(("reference eager", reference.Model(*init).cuda()))
    for label, m in models:
        with torch.no_grad():
            timeline(lambda: m(*inputs), f"{label} forward (no_grad)")
        x = inputs[0].detach().clone().requires_grad_()
        grad = torch.randn_like(m(x))

        def step():
            x.grad = None
            for p in m.parameters():
                p.grad = None
            m(x).backward(grad)

        timeline(step, f"{label} forward+backward")
        del x, grad
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
